def shard_indices(n: int, world_size: int, rank: int, epoch: int = 0, seed: int = 0, shuffle: bool = True,
                  drop_last: bool = False) -> list[int]:
    """Wrong: torch.manual_seed(seed + epoch) and randperm on the global generator: the right indices, but the caller's global random state is reseeded."""
    if drop_last and n % world_size != 0:
        num_samples = math.ceil((n - world_size) / world_size)
    else:
        num_samples = math.ceil(n / world_size)
    total = num_samples * world_size
    if shuffle:
        torch.manual_seed(seed + epoch)
        indices = torch.randperm(n).tolist()
    else:
        indices = list(range(n))
    if drop_last:
        indices = indices[:total]
    else:
        while len(indices) < total:
            indices += indices[:total - len(indices)]
    return indices[rank:total:world_size]
