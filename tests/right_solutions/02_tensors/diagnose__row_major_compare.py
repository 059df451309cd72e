def diagnose(shape, stride):
    """What t.view(-1), t.reshape(-1), t.contiguous() and t.add_(1) do with a tensor of this layout."""
    kept = [(n, s) for n, s in zip(shape, stride) if n > 1]
    inner = kept[-1][1] if kept else 1
    expected, ok = inner, True
    for n, s in reversed(kept):
        ok = ok and s == expected
        expected = s * n
    contiguous = ok and inner == 1
    overlapping = any(s == 0 for _, s in kept)
    return {"view(-1)": "alias" if ok else "raise", "reshape(-1)": "alias" if ok else "copy",
            "contiguous()": "alias" if contiguous else "copy", "add_(1)": "raise" if overlapping else "ok"}
