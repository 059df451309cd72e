def transpose_view(t, dim0, dim1):
    """Wrong: the rule says as_strided only; torch.ops.aten.transpose.int dodges a swapped torch.transpose."""
    return torch.ops.aten.transpose.int(t, dim0, dim1)
