def first_mismatch(calls: list[list[tuple[str, tuple[int, ...]]]]) -> tuple[int, str] | None:
    """The first position where the ranks' collective calls disagree, and why; None if they all agree."""
    from itertools import zip_longest
    for i, column in enumerate(zip_longest(*calls)):
        if None in column:
            return (i, "missing")
        if any(c[0] != column[0][0] for c in column):
            return (i, "op")
        if any(tuple(c[1]) != tuple(column[0][1]) for c in column):
            return (i, "shape")
    return None
