def shard_indices(n: int, world_size: int, rank: int, epoch: int = 0, seed: int = 0, shuffle: bool = True,
                  drop_last: bool = False) -> list[int]:
    """Wrong: pads with indices[:padding], which is too short when the padding exceeds n."""
    num_samples = math.ceil((n - world_size) / world_size) if drop_last and n % world_size else math.ceil(n / world_size)
    total = num_samples * world_size
    if shuffle:
        generator = torch.Generator()
        generator.manual_seed(seed + epoch)
        indices = torch.randperm(n, generator=generator).tolist()
    else:
        indices = list(range(n))
    if drop_last:
        indices = indices[:total]
    else:
        indices += indices[:total - len(indices)]
    return indices[rank:total:world_size]
