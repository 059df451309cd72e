def view_strides(shape, stride, new_shape):
    """Wrong: only a tensor that is one contiguous chunk (after dropping size-1 dims) is viewable; a view that keeps a permuted or sliced dim apart is answered None."""
    dims = [(n, s) for n, s in zip(shape, stride) if n != 1]
    if not dims:
        return tuple(1 for _ in new_shape)
    for (_, outer), (n, s) in zip(dims, dims[1:]):
        if outer != n * s:
            return None
    result, step = [], dims[-1][1]
    for n in reversed(new_shape):
        result.append(step)
        step *= n
    return tuple(reversed(result))
