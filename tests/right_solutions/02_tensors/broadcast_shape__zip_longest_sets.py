def broadcast_shape(*shapes):
    """Broadcast result shape of the given shapes (tuples of ints); raises ValueError if incompatible."""
    from itertools import zip_longest
    out = []
    for sizes in zip_longest(*(reversed(s) for s in shapes), fillvalue=1):
        distinct = set(sizes) - {1}
        if len(distinct) > 1:
            raise ValueError(f"sizes {sizes} do not broadcast")
        out.append(distinct.pop() if distinct else 1)
    return tuple(reversed(out))
