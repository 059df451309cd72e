def broadcast_shape(*shapes):
    """Wrong: an assert (AssertionError) where the prompt asks for ValueError."""
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        for back, size in enumerate(reversed(shape)):
            pos = ndim - 1 - back
            assert size == 1 or result[pos] == 1 or size == result[pos], "do not broadcast"
            if result[pos] == 1:
                result[pos] = size
    return tuple(result)
