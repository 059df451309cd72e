def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Wrong: a collective issued on the ProcessGroup object itself (no torch.distributed function)."""
    from torch.distributed import distributed_c10d

    out = tensor.detach().clone()
    distributed_c10d._get_default_group().allreduce([out]).wait()
    return out
