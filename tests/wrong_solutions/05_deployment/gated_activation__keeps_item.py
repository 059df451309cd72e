import torch


def gated_activation(x):
    """Wrong: right values, but .item() still breaks the graph."""
    if x.mean().item() > 0:
        return torch.sin(x) * 2
    return torch.cos(x) - 1
