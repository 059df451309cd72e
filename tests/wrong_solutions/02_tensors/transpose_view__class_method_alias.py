import torch as T

_swap = T.Tensor.swapaxes


def transpose_view(t, dim0, dim1):
    """Wrong: torch.Tensor.swapaxes, bound to a name before any test could swap the attribute."""
    return _swap(t, dim0, dim1)
