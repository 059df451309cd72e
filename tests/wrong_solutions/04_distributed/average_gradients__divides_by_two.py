def average_gradients(model: nn.Module) -> None:
    """Wrong: divides the summed gradient by 2, the world size of the lab's visible test, not by the real one."""
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            p.grad /= 2
