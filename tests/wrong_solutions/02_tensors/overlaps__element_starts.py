def overlaps(a, b):
    """Wrong: compares the start address of each element only, ignoring its width in bytes (and dtypes)."""
    def starts(t):
        addresses = {t.data_ptr()}
        for dim in range(t.dim()):
            addresses = {p + i * t.stride(dim) * t.element_size() for p in addresses for i in range(t.shape[dim])}
        return addresses if t.numel() else set()
    return bool(starts(a) & starts(b))
