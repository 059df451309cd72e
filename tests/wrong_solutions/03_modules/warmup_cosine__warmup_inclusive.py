# Wrong: "<=" at the end of the warmup, so step t = warmup_steps gets (warmup_steps + 1) / warmup_steps > 1.
def warmup_cosine(optimizer, warmup_steps, total_steps, min_ratio=0.0):
    def factor(t):
        if t >= total_steps:
            return min_ratio
        if warmup_steps and t <= warmup_steps:
            return (t + 1) / warmup_steps
        progress = (t - warmup_steps) / (total_steps - warmup_steps)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
