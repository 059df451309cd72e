import torch


def storage_index(shape, stride, offset=0):
    """Wrong: accumulates in torch.zeros' default dtype, so the indices come back as float32."""
    index = torch.zeros(tuple(shape)) + offset
    for dim, (size, step) in enumerate(zip(shape, stride, strict=True)):
        view_shape = [1] * len(shape)
        view_shape[dim] = size
        index = index + (torch.arange(size) * step).reshape(view_shape)
    return index
