def diagnose(shape, stride):
    """Wrong: checks every neighbouring pair of dims, size-1 dims (whose stride is arbitrary) included."""
    flat = all(stride[d] == shape[d + 1] * stride[d + 1] for d in range(len(shape) - 1))
    dense = flat and (not shape or stride[-1] == 1)
    return {
        "view(-1)": "alias" if flat else "raise",
        "reshape(-1)": "alias" if flat else "copy",
        "contiguous()": "alias" if dense else "copy",
        "add_(1)": "raise" if any(s == 0 and n > 1 for n, s in zip(shape, stride, strict=True)) else "ok",
    }
