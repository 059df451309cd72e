def storage_index(shape, stride, offset=0):
    """Storage index of every element of a tensor with this shape, stride and storage offset."""
    if any(n == 0 for n in shape):
        return torch.empty(tuple(shape), dtype=torch.int64)
    extent = offset + sum((n - 1) * s for n, s in zip(shape, stride)) + 1
    return torch.arange(extent, dtype=torch.int64).as_strided(tuple(shape), tuple(stride), offset).clone()
