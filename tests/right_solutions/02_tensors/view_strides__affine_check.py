def view_strides(shape, stride, new_shape):
    """Strides of t.view(new_shape) for a tensor t with this shape and stride, or None if view raises."""
    # view works exactly when the storage offset of each element (in row-major order) is an affine
    # function of its index in new_shape: read the candidate strides off unit steps, then verify all
    import itertools

    def indices(dims):
        return itertools.product(*(range(n) for n in dims))

    offsets = [sum(i * s for i, s in zip(index, stride)) for index in indices(shape)]
    steps, run = [], 1
    for n in reversed(new_shape):
        steps.append(run)
        run *= n
    steps.reverse()
    new_stride = tuple(offsets[step] - offsets[0] if n > 1 else 1 for n, step in zip(new_shape, steps))
    for flat, index in enumerate(indices(new_shape)):
        if offsets[0] + sum(i * s for i, s in zip(index, new_stride)) != offsets[flat]:
            return None
    return new_stride
