def overlaps(a, b):
    """Wrong: returns a 0-d bool tensor, not a Python bool (and an empty tensor is handled only by accident)."""
    def byte_addresses(t):
        offsets = torch.zeros(tuple(t.shape), dtype=torch.int64)
        for dim, (size, step) in enumerate(zip(t.shape, t.stride())):
            view_shape = [1] * t.dim()
            view_shape[dim] = size
            offsets = offsets + (torch.arange(size, dtype=torch.int64) * step).reshape(view_shape)
        starts = t.data_ptr() + offsets.reshape(-1) * t.element_size()
        return (starts[:, None] + torch.arange(t.element_size())).reshape(-1)
    return torch.isin(byte_addresses(a), byte_addresses(b)).any()
