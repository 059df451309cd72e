def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Wrong: stops after the reduce-scatter phase; each rank has the sum of one chunk only."""
    rank, world = dist.get_rank(), dist.get_world_size()
    flat = tensor.detach().clone().reshape(-1)
    chunks = list(torch.tensor_split(flat, world))
    right, left = (rank + 1) % world, (rank - 1) % world
    for step in range(world - 1):
        send_chunk, recv_chunk = chunks[(rank - step) % world], chunks[(rank - step - 1) % world]
        incoming = torch.empty_like(recv_chunk)
        work = dist.isend(send_chunk.contiguous(), right)
        dist.recv(incoming, left)
        work.wait()
        recv_chunk += incoming
    return flat.reshape(tensor.shape)
