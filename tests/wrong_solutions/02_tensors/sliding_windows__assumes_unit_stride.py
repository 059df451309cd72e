import torch


def sliding_windows(x, size, step):
    """Wrong: uses strides (step, 1), right only when x itself is contiguous."""
    count = (x.shape[0] - size) // step + 1
    return torch.as_strided(x, (count, size), (step, 1), x.storage_offset())
