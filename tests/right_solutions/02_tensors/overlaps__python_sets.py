def overlaps(a, b):
    """True (a Python bool) if an element of a and an element of b share at least one byte of memory."""
    import itertools
    def bytes_of(t):
        size = t.element_size()
        found = set()
        for idx in itertools.product(*(range(n) for n in t.shape)):
            start = t.data_ptr() + size * sum(i * s for i, s in zip(idx, t.stride()))
            found.update(range(start, start + size))
        return found
    return not bytes_of(a).isdisjoint(bytes_of(b))
