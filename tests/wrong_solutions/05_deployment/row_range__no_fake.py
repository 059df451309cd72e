import numpy as np
import torch


@torch.library.custom_op("lab05::row_range", mutates_args=())
def row_range(x: torch.Tensor) -> torch.Tensor:
    """Wrong: a correct implementation, but no fake kernel: compile and export cannot trace the op."""
    a = x.detach().numpy()
    return torch.from_numpy(np.stack([a.min(axis=1), a.max(axis=1)], axis=1))
