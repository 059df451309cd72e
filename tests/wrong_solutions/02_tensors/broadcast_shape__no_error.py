def broadcast_shape(*shapes):
    """Wrong: takes the largest size in each position and never reports incompatible shapes."""
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        for back, size in enumerate(reversed(shape)):
            result[ndim - 1 - back] = max(result[ndim - 1 - back], size)
    return tuple(result)
