def first_mismatch(calls: list[list[tuple[str, tuple[int, ...]]]]) -> tuple[int, str] | None:
    """Wrong: walks rank 0's log only; a rank that made more calls than rank 0 goes unnoticed."""
    if not calls:
        return None
    for position, (op, shape) in enumerate(calls[0]):
        for log in calls[1:]:
            if len(log) <= position:
                return position, "missing"
            if log[position][0] != op:
                return position, "op"
            if tuple(log[position][1]) != tuple(shape):
                return position, "shape"
    return None
