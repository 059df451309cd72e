# Wrong: a module-level counter that is never reset between calls.
def saved_bytes(fn, *args):
    """Bytes autograd saved for backward while running fn(*args) (each packed tensor: numel * element_size).

    Returns an int.
    """
    global _SAVED_TOTAL
    _SAVED_TOTAL = globals().get("_SAVED_TOTAL", 0)

    def pack(t):
        global _SAVED_TOTAL
        _SAVED_TOTAL += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return _SAVED_TOTAL
