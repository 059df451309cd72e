def diagnose(train_epoch):
    """Wrong: hands the epoch a model already in training mode, so an epoch that never calls
    model.train() (and would train in eval mode after an evaluation) looks correct."""
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 3))
    batches = [(torch.randn(6, 4, generator=g), torch.randint(0, 3, (6,), generator=g)) for _ in range(2)]
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=0.0)  # lr 0: the weights stay
    modes, used = [], []
    hook = model.register_forward_pre_hook(lambda mod, args: modes.append(mod.training))
    # What each step uses, read when it starts: .grad after the epoch says nothing (a correct epoch
    # may clear it again after each step).
    optimizer.register_step_pre_hook(
        lambda opt, args, kwargs: used.append([None if p.grad is None else p.grad.clone() for p in params]))
    for p in params:
        p.grad = torch.full_like(p, 100.0)  # stale gradients: no step may use them
    state = torch.get_rng_state()
    train_epoch(model, batches, optimizer)
    hook.remove()
    if not modes or not all(modes):
        return "eval_mode"
    torch.set_rng_state(state)  # replay the forwards: the same dropout masks
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
