def warmup_cosine(optimizer, warmup_steps, total_steps, min_ratio=0.0):
    """Wrong: keeps following the cosine after total_steps, so the lr rises again."""
    def factor(t):
        if t < warmup_steps:
            return (t + 1) / warmup_steps
        progress = (t - warmup_steps) / (total_steps - warmup_steps)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
