def diagnose(shape, stride):
    """Wrong: 'reshape always copies, view never does', and stride 0 anywhere blocks add_."""
    dims = [(n, s) for n, s in zip(shape, stride, strict=True) if n != 1]
    flat = all(outer == n * s for (_, outer), (n, s) in zip(dims, dims[1:], strict=False))
    dense = flat and (not dims or dims[-1][1] == 1)
    return {
        "view(-1)": "alias" if flat else "raise",
        "reshape(-1)": "copy",
        "contiguous()": "alias" if dense else "copy",
        "add_(1)": "raise" if 0 in stride else "ok",
    }
