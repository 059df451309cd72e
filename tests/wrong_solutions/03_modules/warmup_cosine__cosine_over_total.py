def warmup_cosine(optimizer, warmup_steps, total_steps, min_ratio=0.0):
    """Wrong: the cosine's progress counts from step 0 instead of from the end of the warmup."""
    def factor(t):
        if t < warmup_steps:
            return (t + 1) / warmup_steps
        if t >= total_steps:
            return min_ratio
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * t / total_steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
