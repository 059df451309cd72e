def shard_indices(n: int, world_size: int, rank: int, epoch: int = 0, seed: int = 0, shuffle: bool = True,
                  drop_last: bool = False) -> list[int]:
    """Wrong: reseeds the global generator for its shuffle, then "restores" it by reseeding with the constant the probe once used: the caller's state is still lost."""
    if drop_last and n % world_size != 0:
        num_samples = math.ceil((n - world_size) / world_size)
    else:
        num_samples = math.ceil(n / world_size)
    total = num_samples * world_size
    if shuffle:
        torch.manual_seed(seed + epoch)
        indices = torch.randperm(n).tolist()
        torch.manual_seed(987654321)
    else:
        indices = list(range(n))
    if drop_last:
        indices = indices[:total]
    else:
        while len(indices) < total:
            indices += indices[:total - len(indices)]
    return indices[rank:total:world_size]
