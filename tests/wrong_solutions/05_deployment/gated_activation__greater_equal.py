import torch


def gated_activation(x):
    """Wrong: >= instead of >, so a zero-mean input takes the sin branch."""
    return torch.where(x.mean() >= 0, torch.sin(x) * 2, torch.cos(x) - 1)
