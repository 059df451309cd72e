def average_gradients(model: nn.Module) -> None:
    """All-reduce every existing gradient of ``model`` in place and divide it by the world size."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    for g in grads:
        g.div_(dist.get_world_size())
        dist.all_reduce(g)
