def average_gradients(model: nn.Module) -> None:
    """Wrong: gives frozen and unused parameters a zero gradient instead of leaving them without one."""
    world = dist.get_world_size()
    for p in model.parameters():
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad /= world
