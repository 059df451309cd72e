def global_batch_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    """Wrong: each rank's mean loss, gradients averaged over ranks (DDP's rule): right only for equal shards."""
    rank, world = dist.get_rank(), dist.get_world_size()
    F.cross_entropy(model(x[rank::world]), y[rank::world]).backward()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world
