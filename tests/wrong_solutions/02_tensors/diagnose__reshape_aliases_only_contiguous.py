def diagnose(shape, stride):
    """Wrong: says reshape(-1) copies whenever the tensor is not contiguous, though it aliases whenever view(-1) works."""
    dims = [(n, s) for n, s in zip(shape, stride) if n != 1]
    flat = all(outer == inner_n * inner_s for (_, outer), (inner_n, inner_s) in zip(dims, dims[1:]))
    dense = flat and (not dims or dims[-1][1] == 1)
    return {
        "view(-1)": "alias" if flat else "raise",
        "reshape(-1)": "alias" if dense else "copy",
        "contiguous()": "alias" if dense else "copy",
        "add_(1)": "raise" if any(s == 0 for _, s in dims) else "ok",
    }
