def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Wrong: the built-in collective, reached through torch.distributed.distributed_c10d (not dist.*)."""
    from torch.distributed import distributed_c10d

    out = tensor.detach().clone()
    distributed_c10d.all_reduce(out)
    return out
