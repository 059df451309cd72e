def global_batch_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    """Wrong: runs the model on the whole global batch and keeps only its shard's losses (the prompt says to forward only the shard)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    losses = F.cross_entropy(model(x), y, reduction="none")
    (losses[rank::world].sum() / len(y)).backward()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
