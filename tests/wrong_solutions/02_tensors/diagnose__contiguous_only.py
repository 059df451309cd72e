def diagnose(shape, stride):
    """Wrong: 'view needs a contiguous tensor', so view(-1) works exactly when contiguous() aliases."""
    expected, step = [], 1
    for size in reversed(shape):
        expected.append(step)
        step *= size
    contiguous = all(s == e for s, e, n in zip(stride, reversed(expected), shape, strict=True) if n != 1)
    return {
        "view(-1)": "alias" if contiguous else "raise",
        "reshape(-1)": "alias" if contiguous else "copy",
        "contiguous()": "alias" if contiguous else "copy",
        "add_(1)": "raise" if 0 in stride else "ok",
    }
