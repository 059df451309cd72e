def sliding_windows(x, size, step):
    """Windows x[i*step : i*step + size] of a 1-d tensor x as the rows of a 2-d view (shares x's storage)."""
    (s,) = x.stride()
    return x.as_strided(size=(len(range(0, len(x) - size + 1, step)), size), stride=(s * step, s),
                        storage_offset=x.storage_offset())
