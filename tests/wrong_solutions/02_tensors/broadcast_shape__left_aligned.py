def broadcast_shape(*shapes):
    """Wrong: aligns shapes from the left (pads missing dims at the end)."""
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        for pos, size in enumerate(shape):
            if result[pos] == 1:
                result[pos] = size
            elif size != 1 and size != result[pos]:
                raise ValueError(f"shapes {shapes} do not broadcast")
    return tuple(result)
