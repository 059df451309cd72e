def first_mismatch(calls: list[list[tuple[str, tuple[int, ...]]]]) -> tuple[int, str] | None:
    """Wrong: compares ops and shapes of the ranks that have call i before checking for a missing call."""
    longest = max((len(log) for log in calls), default=0)
    for position in range(longest):
        present = [log[position] for log in calls if len(log) > position]
        if len({op for op, _ in present}) > 1:
            return position, "op"
        if len({tuple(shape) for _, shape in present}) > 1:
            return position, "shape"
        if len(present) < len(calls):
            return position, "missing"
    return None
