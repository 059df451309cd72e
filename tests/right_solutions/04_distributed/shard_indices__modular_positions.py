def shard_indices(n: int, world_size: int, rank: int, epoch: int = 0, seed: int = 0, shuffle: bool = True,
                  drop_last: bool = False) -> list[int]:
    """The indices DistributedSampler yields on ``rank`` for epoch ``epoch``."""
    # the rank's positions in the padded (or cut) list, each read modulo n: no padded list is built
    if drop_last and n % world_size:
        num_samples = (n - world_size) // world_size + ((n - world_size) % world_size > 0)
    else:
        num_samples = (n + world_size - 1) // world_size
    order = (torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)) if shuffle
             else torch.arange(n))
    positions = torch.arange(num_samples) * world_size + rank
    return order[positions % n].tolist() if n else []
