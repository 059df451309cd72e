def broadcast_shape(*shapes):
    result = ()
    for shape in shapes:
        a, b = tuple(result), tuple(shape)
        n = max(len(a), len(b))
        a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
        merged = []
        for x, y in zip(a, b):
            if x == y or y == 1:
                merged.append(x)
            elif x == 1:
                merged.append(y)
            else:
                raise ValueError(f"cannot broadcast {a} with {b}")
        result = tuple(merged)
    return result
