def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Sum ``tensor`` over all ranks with a ring of isend/recv; returns a new tensor (input unchanged)."""
    # blocking send/recv ordered by rank parity (even ranks send first, odd ranks receive first), on a
    # list of separate chunk tensors that are concatenated at the end
    rank, world = dist.get_rank(), dist.get_world_size()
    chunks = [c.clone() for c in torch.tensor_split(tensor.reshape(-1), world)]
    right, left = (rank + 1) % world, (rank - 1) % world

    def exchange(send_index: int, recv_index: int) -> torch.Tensor:
        incoming = torch.empty_like(chunks[recv_index])
        if rank % 2 == 0:
            dist.send(chunks[send_index], right)
            dist.recv(incoming, left)
        else:
            dist.recv(incoming, left)
            dist.send(chunks[send_index], right)
        return incoming

    for step in range(world - 1):
        target = (rank - step - 1) % world
        chunks[target] = chunks[target] + exchange((rank - step) % world, target)
    for step in range(world - 1):
        target = (rank - step) % world
        chunks[target] = exchange((rank + 1 - step) % world, target)
    return torch.cat(chunks).reshape(tensor.shape)
