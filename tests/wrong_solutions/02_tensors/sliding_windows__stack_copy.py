import torch


def sliding_windows(x, size, step):
    """Wrong: right values, but stacking slices copies them."""
    return torch.stack([x[i:i + size] for i in range(0, x.shape[0] - size + 1, step)])
