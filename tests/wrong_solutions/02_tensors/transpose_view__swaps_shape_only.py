import torch


def transpose_view(t, dim0, dim1):
    """Wrong: swaps the sizes but keeps the strides (that is a reshape, not a transpose)."""
    dim0, dim1 = dim0 % t.dim(), dim1 % t.dim()
    shape = list(t.shape)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    return torch.as_strided(t, shape, t.stride(), t.storage_offset())
