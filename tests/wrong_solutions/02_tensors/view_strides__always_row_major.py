def view_strides(shape, stride, new_shape):
    """Wrong: 'view only changes the shape', so it always succeeds with row-major strides."""
    new_stride, step = [], 1
    for size in reversed(new_shape):
        new_stride.append(step)
        step *= size
    return tuple(reversed(new_stride))
