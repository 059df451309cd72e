def overlaps(a, b):
    """Wrong: compares the byte ranges [first, last] each tensor spans, so interleaved views 'overlap'."""
    def span(t):
        last = sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
        start = t.data_ptr()
        return start, start + (last + 1) * t.element_size()

    if a.numel() == 0 or b.numel() == 0:
        return False
    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1
