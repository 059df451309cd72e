def average_gradients(model: nn.Module) -> None:
    """Wrong: assumes every parameter has a gradient (frozen or unused ones have None)."""
    world = dist.get_world_size()
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad /= world
