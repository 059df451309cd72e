def storage_index(shape, stride, offset=0):
    """Wrong: int32 indices, where the prompt asks for int64."""
    index = torch.full(tuple(shape), offset, dtype=torch.int32)
    for dim, (size, step) in enumerate(zip(shape, stride)):
        view_shape = [1] * len(shape)
        view_shape[dim] = size
        index = index + (torch.arange(size, dtype=torch.int32) * step).reshape(view_shape)
    return index
