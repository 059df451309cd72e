def average_gradients(model: nn.Module) -> None:
    """Wrong: broadcasts rank 0's gradient instead of averaging over ranks."""
    for p in model.parameters():
        if p.grad is not None:
            dist.broadcast(p.grad, src=0)
