import numpy as np
import torch


@torch.library.custom_op("lab05::row_range", mutates_args=())
def row_range(x: torch.Tensor) -> torch.Tensor:
    """Wrong: NumPy's axis=0 reduces over rows (per column), and the overall min/max is repeated per row."""
    a = x.detach().numpy()
    lo, hi = a.min(axis=0).min(), a.max(axis=0).max()
    return torch.from_numpy(np.tile(np.array([lo, hi], dtype=a.dtype), (a.shape[0], 1)))


@row_range.register_fake
def _(x):
    return x.new_empty(x.shape[0], 2)
