import torch


def storage_index(shape, stride, offset=0):
    """Wrong: assumes row-major layout (ignores the given strides)."""
    numel = 1
    for size in shape:
        numel *= size
    return offset + torch.arange(numel, dtype=torch.int64).reshape(tuple(shape))
