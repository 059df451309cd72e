import torch


def storage_index(shape, stride, offset=0):
    """Wrong: forgets the storage offset (right only for tensors that start at storage[0])."""
    index = torch.zeros(tuple(shape), dtype=torch.int64)
    for dim, (size, step) in enumerate(zip(shape, stride, strict=True)):
        view_shape = [1] * len(shape)
        view_shape[dim] = size
        index = index + (torch.arange(size, dtype=torch.int64) * step).reshape(view_shape)
    return index
