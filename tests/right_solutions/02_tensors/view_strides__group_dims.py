def view_strides(shape, stride, new_shape):
    """Strides of t.view(new_shape) for a tensor t with this shape and stride, or None if view raises."""
    dims = [(n, s) for n, s in zip(shape, stride) if n != 1]
    # split the old dims into chunks that are contiguous among themselves
    chunks = []
    for n, s in dims:
        if chunks and chunks[-1][-1][1] == n * s:
            chunks[-1].append((n, s))
        else:
            chunks.append([(n, s)])
    out = [1] * len(new_shape)
    j = 0
    for chunk in chunks:
        size = 1
        for n, _ in chunk:
            size *= n
        members, got = [], 1
        while j < len(new_shape) and (got < size or new_shape[j] == 1):
            if new_shape[j] != 1:
                got *= new_shape[j]
            members.append(j)
            j += 1
        if got != size:
            return None
        step = chunk[-1][1]
        for k in reversed(members):
            out[k] = step
            step *= new_shape[k]
    if any(new_shape[k] != 1 for k in range(j, len(new_shape))):
        return None
    return tuple(out)
