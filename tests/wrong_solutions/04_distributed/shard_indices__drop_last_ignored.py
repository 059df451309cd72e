def shard_indices(n: int, world_size: int, rank: int, epoch: int = 0, seed: int = 0, shuffle: bool = True,
                  drop_last: bool = False) -> list[int]:
    """Wrong: always pads to ceil(n / W) per rank, even with drop_last."""
    num_samples = math.ceil(n / world_size)
    total = num_samples * world_size
    if shuffle:
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        indices = torch.randperm(n, generator=g).tolist()
    else:
        indices = list(range(n))
    while len(indices) < total:
        indices += indices[:total - len(indices)]
    return indices[rank:total:world_size]
