def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Wrong: calls the built-in collective instead of implementing the ring."""
    out = tensor.detach().clone()
    dist.all_reduce(out)
    return out
