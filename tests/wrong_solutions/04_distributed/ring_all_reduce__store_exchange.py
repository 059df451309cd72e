def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Wrong: swaps whole tensors through the rendezvous store instead of send/recv."""
    from torch.distributed import distributed_c10d

    store = distributed_c10d._get_default_store()
    rank, world = dist.get_rank(), dist.get_world_size()
    call = store.add(f"wrong-ring-calls-{rank}", 1)
    flat = tensor.detach().contiguous().reshape(-1)
    store.set(f"wrong-ring-{call}-{rank}", flat.numpy().tobytes())
    out = torch.zeros_like(flat)
    for peer in range(world):
        raw = store.get(f"wrong-ring-{call}-{peer}")
        out += torch.frombuffer(bytearray(raw), dtype=flat.dtype)
    return out.reshape(tensor.shape)
