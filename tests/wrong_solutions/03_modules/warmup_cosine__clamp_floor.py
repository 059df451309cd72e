# Wrong: clamps the plain cosine at min_ratio instead of rescaling it into [min_ratio, 1].
def warmup_cosine(optimizer, warmup_steps, total_steps, min_ratio=0.0):
    def factor(t):
        if t < warmup_steps:
            return (t + 1) / warmup_steps
        if t >= total_steps:
            return min_ratio
        progress = (t - warmup_steps) / (total_steps - warmup_steps)
        return max(min_ratio, 0.5 * (1 + math.cos(math.pi * progress)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
