def storage_index(shape, stride, offset=0):
    """Wrong: as_strided over an arange of 'offset + sum((n-1)*s) + 1' elements: that count is negative for some empty tensors (a 0 size with a large stride)."""
    extent = offset + sum((n - 1) * s for n, s in zip(shape, stride)) + 1
    return torch.arange(extent, dtype=torch.int64).as_strided(tuple(shape), tuple(stride), offset)
