def view_strides(shape, stride, new_shape):
    """Wrong: 'view needs a contiguous tensor', so anything non-contiguous gives None."""
    expected, step = [], 1
    for size in reversed(shape):
        expected.append(step)
        step *= size
    contiguous = all(s == e for s, e, n in zip(stride, reversed(expected), shape, strict=True) if n != 1)
    if not contiguous:
        return None
    new_stride, step = [], 1
    for size in reversed(new_shape):
        new_stride.append(step)
        step *= size
    return tuple(reversed(new_stride))
