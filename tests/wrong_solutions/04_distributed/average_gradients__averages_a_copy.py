def average_gradients(model: nn.Module) -> None:
    """Wrong: averages a copy of each gradient; the parameter's .grad is never updated."""
    world = dist.get_world_size()
    for p in model.parameters():
        if p.grad is not None:
            grad = p.grad.clone()
            dist.all_reduce(grad, op=dist.ReduceOp.SUM)
            grad /= world
