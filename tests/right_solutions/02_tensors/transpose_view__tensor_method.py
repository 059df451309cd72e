def transpose_view(t, dim0, dim1):
    size, stride = list(t.size()), list(t.stride())
    size[dim0], size[dim1] = size[dim1], size[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return t.as_strided(size, stride)
