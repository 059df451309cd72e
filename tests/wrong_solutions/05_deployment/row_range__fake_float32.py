import numpy as np
import torch


@torch.library.custom_op("lab05::row_range", mutates_args=())
def row_range(x: torch.Tensor) -> torch.Tensor:
    a = x.detach().numpy()
    return torch.from_numpy(np.stack([a.min(axis=1), a.max(axis=1)], axis=1))


@row_range.register_fake
def _(x):
    """Wrong: torch.empty's default dtype is float32, whatever the input's dtype."""
    return torch.empty(x.shape[0], 2)
