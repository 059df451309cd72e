def sliding_windows(x, size, step):
    """Wrong: Tensor.unfold reached through getattr on the class, which a swapped attribute misses."""
    return getattr(type(x).__mro__[1], "unf" + "old")(x, 0, size, step)
