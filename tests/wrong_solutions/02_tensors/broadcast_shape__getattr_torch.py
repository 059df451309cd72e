def broadcast_shape(*shapes):
    """Wrong: torch.broadcast_shapes through getattr, with its RuntimeError turned into ValueError."""
    try:
        return tuple(getattr(torch, "broadcast_" + "shapes")(*shapes))
    except RuntimeError as err:
        raise ValueError(str(err)) from None
