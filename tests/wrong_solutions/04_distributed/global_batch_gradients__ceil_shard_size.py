def global_batch_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    """Wrong: weights every rank's mean loss by ceil(N / W) rows: wrong when shards differ by one row."""
    rank, world = dist.get_rank(), dist.get_world_size()
    local_mean = F.cross_entropy(model(x[rank::world]), y[rank::world])
    (local_mean * math.ceil(len(y) / world) / len(y)).backward()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
