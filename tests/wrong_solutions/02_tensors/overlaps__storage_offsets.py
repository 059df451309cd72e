def overlaps(a, b):
    """Wrong: compares storage offsets, not addresses: views of different storages that start at offset 0 'overlap'."""
    def cells(t):
        idx = [t.storage_offset()]
        for n, s in zip(t.shape, t.stride()):
            idx = [i + k * s for i in idx for k in range(n)]
        return {c * t.element_size() + byte for c in idx for byte in range(t.element_size())}
    if a.numel() == 0 or b.numel() == 0:
        return False
    return bool(cells(a) & cells(b))
