def warmup_cosine(optimizer, warmup_steps, total_steps, min_ratio=0.0):
    span = total_steps - warmup_steps

    def factor(t):
        if t < warmup_steps:
            return (t + 1) / warmup_steps
        progress = min(t - warmup_steps, span) / span  # past the end: cos(pi) = -1, the floor
        return min_ratio + (1 - min_ratio) * (1 + math.cos(math.pi * progress)) / 2

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=factor)
