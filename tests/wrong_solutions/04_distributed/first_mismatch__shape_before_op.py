def first_mismatch(calls: list[list[tuple[str, tuple[int, ...]]]]) -> tuple[int, str] | None:
    """Wrong: compares whole calls and calls any difference a shape mismatch unless the shapes agree."""
    longest = max((len(log) for log in calls), default=0)
    for position in range(longest):
        if any(len(log) <= position for log in calls):
            return position, "missing"
        if len({tuple(log[position][1]) for log in calls}) > 1:
            return position, "shape"
        if len({log[position][0] for log in calls}) > 1:
            return position, "op"
    return None
