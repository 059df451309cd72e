def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Wrong: torch.chunk instead of tensor_split: fewer than W chunks when the tensor is small, so chunk indices wrap."""
    rank, world = dist.get_rank(), dist.get_world_size()
    flat = tensor.detach().clone().reshape(-1)
    chunks = list(torch.chunk(flat, world))
    right, left = (rank + 1) % world, (rank - 1) % world
    for step in range(world - 1):
        send_chunk, recv_chunk = chunks[(rank - step) % len(chunks)], chunks[(rank - step - 1) % len(chunks)]
        incoming = torch.empty_like(recv_chunk)
        work = dist.isend(send_chunk.contiguous(), right)
        dist.recv(incoming, left)
        work.wait()
        recv_chunk += incoming
    for step in range(world - 1):
        send_chunk, recv_chunk = chunks[(rank + 1 - step) % len(chunks)], chunks[(rank - step) % len(chunks)]
        incoming = torch.empty_like(recv_chunk)
        work = dist.isend(send_chunk.contiguous(), right)
        dist.recv(incoming, left)
        work.wait()
        recv_chunk.copy_(incoming)
    return flat.reshape(tensor.shape)
