def diagnose(shape, stride):
    """Wrong: says contiguous() returns the tensor itself whenever view(-1) works (a stepped 1-d tensor is viewable but not contiguous)."""
    dims = [(n, s) for n, s in zip(shape, stride) if n != 1]
    flat = all(outer == inner_n * inner_s for (_, outer), (inner_n, inner_s) in zip(dims, dims[1:]))
    return {
        "view(-1)": "alias" if flat else "raise",
        "reshape(-1)": "alias" if flat else "copy",
        "contiguous()": "alias" if flat else "copy",
        "add_(1)": "raise" if any(s == 0 for _, s in dims) else "ok",
    }
