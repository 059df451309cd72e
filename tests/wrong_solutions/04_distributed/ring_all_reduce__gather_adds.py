def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Wrong: the all-gather phase adds the received chunk instead of overwriting it."""
    rank, world = dist.get_rank(), dist.get_world_size()
    flat = tensor.detach().clone().reshape(-1)
    chunks = list(torch.tensor_split(flat, world))
    right, left = (rank + 1) % world, (rank - 1) % world
    for phase in range(2):
        for step in range(world - 1):
            if phase == 0:
                send_chunk, recv_chunk = chunks[(rank - step) % world], chunks[(rank - step - 1) % world]
            else:
                send_chunk, recv_chunk = chunks[(rank + 1 - step) % world], chunks[(rank - step) % world]
            incoming = torch.empty_like(recv_chunk)
            work = dist.isend(send_chunk.contiguous(), right)
            dist.recv(incoming, left)
            work.wait()
            recv_chunk += incoming
    return flat.reshape(tensor.shape)
