def global_batch_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    """Wrong: all-reduces the gradient of the summed loss and forgets to divide by the global batch size."""
    rank, world = dist.get_rank(), dist.get_world_size()
    F.cross_entropy(model(x[rank::world]), y[rank::world], reduction="sum").backward()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
