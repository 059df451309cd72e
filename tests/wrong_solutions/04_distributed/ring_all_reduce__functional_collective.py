def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Wrong: a functional collective (torch.distributed._functional_collectives), not send/recv."""
    import torch.distributed._functional_collectives as funcol

    return funcol.all_reduce(tensor.detach().clone(), "sum", dist.group.WORLD).wait()
