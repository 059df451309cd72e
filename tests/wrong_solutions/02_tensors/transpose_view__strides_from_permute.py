def transpose_view(t, dim0, dim1):
    """Wrong: as_strided in the end, but the layout comes from t.permute (the rule: as_strided only)."""
    order = list(range(t.dim()))
    order[dim0], order[dim1] = order[dim1], order[dim0]
    model = t.permute(order)
    return torch.as_strided(t, model.shape, model.stride(), t.storage_offset())
