def transpose_view(t, dim0, dim1):
    """Wrong: reverses every dim (right for 2-d tensors only)."""
    if dim0 % t.dim() == dim1 % t.dim():
        return torch.as_strided(t, t.shape, t.stride(), t.storage_offset())
    return torch.as_strided(t, t.shape[::-1], t.stride()[::-1], t.storage_offset())
