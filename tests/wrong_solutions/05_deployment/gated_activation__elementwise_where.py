import torch


def gated_activation(x):
    """Wrong: gates each element on its own sign instead of on the mean."""
    return torch.where(x > 0, torch.sin(x) * 2, torch.cos(x) - 1)
