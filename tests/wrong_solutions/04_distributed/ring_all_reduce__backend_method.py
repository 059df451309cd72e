def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Wrong: the gloo backend's allreduce, called directly (it skips the c10d dispatcher ops)."""
    from torch.distributed import distributed_c10d

    out = tensor.detach().clone()
    backend = distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    backend.allreduce([out]).wait()
    return out
