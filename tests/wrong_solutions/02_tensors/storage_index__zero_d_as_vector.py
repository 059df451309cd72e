def storage_index(shape, stride, offset=0):
    """Wrong: a 0-d shape gives a 1-element vector instead of a 0-d tensor."""
    if len(shape) == 0:
        return torch.tensor([offset], dtype=torch.int64)
    index = torch.full(tuple(shape), offset, dtype=torch.int64)
    for dim, (size, step) in enumerate(zip(shape, stride)):
        view_shape = [1] * len(shape)
        view_shape[dim] = size
        index = index + (torch.arange(size, dtype=torch.int64) * step).reshape(view_shape)
    return index
