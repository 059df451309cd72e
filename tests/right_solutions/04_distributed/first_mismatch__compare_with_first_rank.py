def first_mismatch(calls: list[list[tuple[str, tuple[int, ...]]]]) -> tuple[int, str] | None:
    """The first position where the ranks' collective calls disagree, and why; None if they all agree."""
    # position by position, every rank against the first: lengths, then ops, then shapes, no sets
    shortest, longest = min(len(log) for log in calls), max(len(log) for log in calls)
    for i in range(longest):
        if i >= shortest:
            return i, "missing"
        op, shape = calls[0][i]
        if any(log[i][0] != op for log in calls[1:]):
            return i, "op"
        if any(tuple(log[i][1]) != tuple(shape) for log in calls[1:]):
            return i, "shape"
    return None
