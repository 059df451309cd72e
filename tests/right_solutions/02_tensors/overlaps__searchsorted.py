def overlaps(a, b):
    """True (a Python bool) if an element of a and an element of b share at least one byte of memory."""
    if a.numel() == 0 or b.numel() == 0:
        return False

    def starts(t):
        # byte address of each element: flat index -> coordinates -> strides
        if t.dim() == 0:
            return torch.tensor([t.data_ptr()], dtype=torch.int64)
        coords = torch.unravel_index(torch.arange(t.numel()), tuple(t.shape))
        offset = sum(c * s for c, s in zip(coords, t.stride()))
        return t.data_ptr() + offset * t.element_size()

    # element [s, s + sa) of a meets element [u, u + sb) of b iff s - sb < u < s + sa: find, for each
    # element of a, the lowest start of b above s - sb in b's sorted starts and test it against s + sa
    sa, sb = a.element_size(), b.element_size()
    a_starts, b_sorted = starts(a), starts(b).sort().values
    at = torch.searchsorted(b_sorted, a_starts - sb, right=True)
    found = at < len(b_sorted)
    candidates = b_sorted[at.clamp(max=len(b_sorted) - 1)]
    return bool((found & (candidates < a_starts + sa)).any())
