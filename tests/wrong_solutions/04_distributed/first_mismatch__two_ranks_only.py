def first_mismatch(calls: list[list[tuple[str, tuple[int, ...]]]]) -> tuple[int, str] | None:
    """Wrong: compares rank 0 with rank 1 only, as if every job had two ranks."""
    if len(calls) < 2:
        return None
    a, b = calls[0], calls[1]
    for position in range(max(len(a), len(b))):
        if position >= len(a) or position >= len(b):
            return position, "missing"
        if a[position][0] != b[position][0]:
            return position, "op"
        if tuple(a[position][1]) != tuple(b[position][1]):
            return position, "shape"
    return None
