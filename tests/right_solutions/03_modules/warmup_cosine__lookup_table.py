def warmup_cosine(optimizer, warmup_steps, total_steps, min_ratio=0.0):
    # every factor up to total_steps worked out once; past the end, the floor
    span = total_steps - warmup_steps
    table = [(t + 1) / warmup_steps for t in range(warmup_steps)]
    table += [min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * k / span)) for k in range(span)]

    def factor(t):
        return table[t] if t < len(table) else min_ratio

    return torch.optim.lr_scheduler.LambdaLR(optimizer, [factor] * len(optimizer.param_groups))
