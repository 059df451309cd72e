def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Wrong: works in float32 whatever the input dtype (float64 inputs come back float32)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    flat = tensor.detach().to(torch.float32).reshape(-1).clone()
    chunks = list(torch.tensor_split(flat, world))
    right, left = (rank + 1) % world, (rank - 1) % world
    for step in range(world - 1):
        send_chunk, recv_chunk = chunks[(rank - step) % world], chunks[(rank - step - 1) % world]
        incoming = torch.empty_like(recv_chunk)
        work = dist.isend(send_chunk.contiguous(), right)
        dist.recv(incoming, left)
        work.wait()
        recv_chunk += incoming
    for step in range(world - 1):
        send_chunk, recv_chunk = chunks[(rank + 1 - step) % world], chunks[(rank - step) % world]
        incoming = torch.empty_like(recv_chunk)
        work = dist.isend(send_chunk.contiguous(), right)
        dist.recv(incoming, left)
        work.wait()
        recv_chunk.copy_(incoming)
    return flat.reshape(tensor.shape)
