def storage_index(shape, stride, offset=0):
    """Storage index of every element of a tensor with this shape, stride and storage offset."""
    import itertools
    values = [offset + sum(i * s for i, s in zip(idx, stride)) for idx in itertools.product(*(range(n) for n in shape))]
    return torch.tensor(values, dtype=torch.int64).reshape(tuple(shape))
