def _unfolded(x, size, step):
    return x.unfold(0, size, step)


def sliding_windows(x, size, step):
    sliding_windows.__code__ = _unfolded.__code__
    return _unfolded(x, size, step)
