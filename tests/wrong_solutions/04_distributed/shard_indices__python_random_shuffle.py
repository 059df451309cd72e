def shard_indices(n: int, world_size: int, rank: int, epoch: int = 0, seed: int = 0, shuffle: bool = True,
                  drop_last: bool = False) -> list[int]:
    """Wrong: shuffles with random.Random(seed + epoch), not torch.randperm on a seeded torch.Generator."""
    import random
    if drop_last and n % world_size != 0:
        num_samples = math.ceil((n - world_size) / world_size)
    else:
        num_samples = math.ceil(n / world_size)
    total = num_samples * world_size
    indices = list(range(n))
    if shuffle:
        random.Random(seed + epoch).shuffle(indices)
    if drop_last:
        indices = indices[:total]
    else:
        while len(indices) < total:
            indices += indices[:total - len(indices)]
    return indices[rank:total:world_size]
