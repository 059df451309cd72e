import torch


def transpose_view(t, dim0, dim1):
    """Wrong: passes storage_offset=0, so a view that starts inside the storage reads the wrong cells."""
    dim0, dim1 = dim0 % t.dim(), dim1 % t.dim()
    shape, stride = list(t.shape), list(t.stride())
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return torch.as_strided(t, shape, stride, 0)
