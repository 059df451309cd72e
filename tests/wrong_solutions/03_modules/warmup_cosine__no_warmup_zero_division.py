# Wrong: computes the warmup factor before testing which phase t is in, so warmup_steps = 0
# (allowed: 0 <= warmup_steps) divides by zero.
def warmup_cosine(optimizer, warmup_steps, total_steps, min_ratio=0.0):
    def factor(t):
        warm = (t + 1) / warmup_steps
        if t < warmup_steps:
            return warm
        if t >= total_steps:
            return min_ratio
        progress = (t - warmup_steps) / (total_steps - warmup_steps)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
