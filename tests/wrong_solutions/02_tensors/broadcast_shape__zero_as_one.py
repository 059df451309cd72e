def broadcast_shape(*shapes):
    """Wrong: treats size 0 like size 1 (0 and 3 'broadcast' to 3)."""
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        for back, size in enumerate(reversed(shape)):
            pos = ndim - 1 - back
            if result[pos] in (0, 1):
                result[pos] = max(result[pos], size) if size != 0 else result[pos] * 0
            elif size not in (0, 1) and size != result[pos]:
                raise ValueError(f"shapes {shapes} do not broadcast")
    return tuple(result)
