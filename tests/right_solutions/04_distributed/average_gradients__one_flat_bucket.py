def average_gradients(model: nn.Module) -> None:
    """All-reduce every existing gradient of ``model`` in place and divide it by the world size."""
    # DDP's way: one flat bucket, one all-reduce, then the averaged values copied back into each gradient
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return
    bucket = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(bucket)
    bucket /= dist.get_world_size()
    offset = 0
    for g in grads:
        g.copy_(bucket[offset:offset + g.numel()].view_as(g))
        offset += g.numel()
