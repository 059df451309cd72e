def global_batch_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    """Wrong: scales the local loss by the global batch size but never combines the ranks' gradients."""
    rank, world = dist.get_rank(), dist.get_world_size()
    (F.cross_entropy(model(x[rank::world]), y[rank::world], reduction="sum") / len(y)).backward()
