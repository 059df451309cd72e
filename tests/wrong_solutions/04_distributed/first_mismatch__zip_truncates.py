def first_mismatch(calls: list[list[tuple[str, tuple[int, ...]]]]) -> tuple[int, str] | None:
    """Wrong: zip(*calls) stops at the shortest log, so a rank that stopped early is never seen."""
    for position, step in enumerate(zip(*calls)):
        if len({op for op, _ in step}) > 1:
            return position, "op"
        if len({tuple(shape) for _, shape in step}) > 1:
            return position, "shape"
    return None
