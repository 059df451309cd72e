def shard_indices(n: int, world_size: int, rank: int, epoch: int = 0, seed: int = 0, shuffle: bool = True,
                  drop_last: bool = False) -> list[int]:
    """The indices DistributedSampler yields on ``rank`` for epoch ``epoch``."""
    import itertools
    num_samples = n // world_size if drop_last else -(-n // world_size)
    total = num_samples * world_size
    if shuffle:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    else:
        order = list(range(n))
    padded = list(itertools.islice(itertools.cycle(order), total))
    return [padded[i] for i in range(rank, total, world_size)]
