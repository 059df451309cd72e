def broadcast_shape(*shapes):
    """Wrong: lets torch broadcast empty tensors of these shapes instead of applying the rule."""
    if not shapes:
        return ()
    try:
        return tuple(torch.broadcast_tensors(*[torch.empty(s) for s in shapes])[0].shape)
    except RuntimeError as err:
        raise ValueError(str(err)) from None
