def broadcast_shape(*shapes):
    """Wrong: checks every shape against the first one only, not against the result so far."""
    if not shapes:
        return ()
    ndim = max(len(s) for s in shapes)
    first = (1,) * (ndim - len(shapes[0])) + tuple(shapes[0])
    result = list(first)
    for shape in shapes[1:]:
        padded = (1,) * (ndim - len(shape)) + tuple(shape)
        for i, (a, b) in enumerate(zip(first, padded)):
            if a != b and a != 1 and b != 1:
                raise ValueError("shapes do not broadcast")
            if result[i] == 1:
                result[i] = b
    return tuple(result)
