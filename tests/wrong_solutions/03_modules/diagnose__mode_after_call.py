def diagnose(train_epoch):
    """Wrong: looks at model.training after the call, not during the forward passes."""
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 3))
    batches = [(torch.randn(6, 4, generator=g), torch.randint(0, 3, (6,), generator=g)) for _ in range(2)]
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=0.0)
    used = []
    optimizer.register_step_pre_hook(
        lambda opt, args, kwargs: used.append([None if p.grad is None else p.grad.clone() for p in params]))
    model.eval()
    for p in params:
        p.grad = torch.full_like(p, 100.0)
    state = torch.get_rng_state()
    train_epoch(model, batches, optimizer)
    if not model.training:
        return "eval_mode"
    torch.set_rng_state(state)
    logits = [model(x) for x, _ in batches]
    right = [torch.autograd.grad(F.cross_entropy(out, y), params, retain_graph=True)
             for out, (_, y) in zip(logits, batches)]
    probs = [torch.autograd.grad(F.cross_entropy(out.softmax(dim=1), y), params)
             for out, (_, y) in zip(logits, batches)]

    def matches(expected):
        return len(used) == len(expected) and all(
            a is not None and torch.allclose(a, b, atol=1e-6)
            for step, want in zip(used, expected) for a, b in zip(step, want))

    if matches(right):
        return "ok"
    if matches(probs):
        return "softmax_loss"
    return "no_zero_grad"
