# Wrong: switches anomaly mode on globally and never switches it off.
def nan_node(loss_fn, x):
    """Type name of the first backward node that returns NaN for loss_fn at x, or None."""
    import re
    torch.autograd.set_detect_anomaly(True)
    xr = x.detach().clone().requires_grad_()
    try:
        loss_fn(xr).backward()
    except RuntimeError as err:
        found = re.search(r"Function '(\w+)' returned nan", str(err))
        if found:
            return found.group(1)
        raise
    return None
