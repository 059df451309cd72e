def sliding_windows(x, size, step):
    """Windows x[i*step : i*step + size] of a 1-d tensor x as the rows of a 2-d view (shares x's storage)."""
    count = 0
    while count * step + size <= x.numel():
        count += 1
    inner = x.stride(-1)
    # as_strided's storage offset defaults to x's own
    return x.as_strided((count, size), (inner * step, inner))
