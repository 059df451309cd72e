def shard_indices(n: int, world_size: int, rank: int, epoch: int = 0, seed: int = 0, shuffle: bool = True,
                  drop_last: bool = False) -> list[int]:
    """Wrong: gives each rank a contiguous block of the list instead of every W-th index."""
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
        padding = total - len(indices)
        indices += (indices * math.ceil(padding / len(indices)))[:padding] if padding > 0 else []
    return indices[rank * num_samples:(rank + 1) * num_samples]
