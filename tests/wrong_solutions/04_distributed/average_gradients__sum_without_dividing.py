def average_gradients(model: nn.Module) -> None:
    """Wrong: all-reduces (sums) the gradients but forgets to divide by the world size."""
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
