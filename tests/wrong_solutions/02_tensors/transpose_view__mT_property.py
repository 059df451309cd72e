def transpose_view(t, dim0, dim1):
    """Wrong: .mT (a property, no transpose attribute involved) moved to the requested dims with as_strided strides."""
    dim0, dim1 = dim0 % t.dim(), dim1 % t.dim()
    if dim0 == dim1:
        return torch.as_strided(t, t.shape, t.stride(), t.storage_offset())
    shape, stride = list(t.shape), list(t.stride())
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    swapped = t.mT if {dim0, dim1} == {t.dim() - 2, t.dim() - 1} else None
    if swapped is not None:
        return swapped
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return torch.as_strided(t, shape, stride, t.storage_offset())
