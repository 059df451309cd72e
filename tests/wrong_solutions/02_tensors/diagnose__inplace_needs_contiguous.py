def diagnose(shape, stride):
    """Wrong: 'in-place ops need a contiguous tensor', so add_ raises on every non-contiguous layout."""
    dims = [(n, s) for n, s in zip(shape, stride, strict=True) if n != 1]
    flat = all(outer == n * s for (_, outer), (n, s) in zip(dims, dims[1:], strict=False))
    dense = flat and (not dims or dims[-1][1] == 1)
    return {
        "view(-1)": "alias" if flat else "raise",
        "reshape(-1)": "alias" if flat else "copy",
        "contiguous()": "alias" if dense else "copy",
        "add_(1)": "ok" if dense else "raise",
    }
