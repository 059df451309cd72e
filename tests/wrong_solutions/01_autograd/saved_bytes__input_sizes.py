# Wrong: sums the sizes of the inputs instead of what was saved.
def saved_bytes(fn, *args):
    """Bytes autograd saved for backward while running fn(*args) (each packed tensor: numel * element_size).

    Returns an int.
    """
    fn(*args)
    return sum(a.numel() * a.element_size() for a in args if a.requires_grad)
