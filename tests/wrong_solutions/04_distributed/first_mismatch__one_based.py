def first_mismatch(calls: list[list[tuple[str, tuple[int, ...]]]]) -> tuple[int, str] | None:
    """Wrong: positions counted from 1."""
    longest = max((len(log) for log in calls), default=0)
    for position in range(1, longest + 1):
        if any(len(log) < position for log in calls):
            return position, "missing"
        if len({log[position - 1][0] for log in calls}) > 1:
            return position, "op"
        if len({tuple(log[position - 1][1]) for log in calls}) > 1:
            return position, "shape"
    return None
