def transpose_view(t, dim0, dim1):
    """Wrong: as_strided on t.detach(): a view of the right memory, but gradients no longer flow back to t."""
    dim0, dim1 = dim0 % t.dim(), dim1 % t.dim()
    shape, stride = list(t.shape), list(t.stride())
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return torch.as_strided(t.detach(), shape, stride, t.storage_offset())
