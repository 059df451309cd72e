def diagnose(train_epoch):
    # No dropout in the probe model: nothing random to replay; eval mode is seen by a hook. The
    # gradients each step uses are recorded by the optimizer itself (an epoch may clear .grad again
    # after its steps, so .grad after the epoch tells nothing).
    g = torch.Generator().manual_seed(1)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 4))
    batches = [(torch.randn(5, 5, generator=g), torch.randint(0, 4, (5,), generator=g)) for _ in range(3)]
    params = list(model.parameters())
    stepped = []

    class Recording(torch.optim.SGD):
        def step(self, closure=None):
            stepped.append([p.grad.clone() if p.grad is not None else None for p in params])
            return super().step(closure)

    seen_modes = []
    handle = model.register_forward_pre_hook(lambda m, a: seen_modes.append(m.training))
    model.eval()
    for p in params:
        p.grad = torch.ones_like(p) * 7.0
    train_epoch(model, batches, Recording(params, lr=0.0))
    handle.remove()
    if not seen_modes or False in seen_modes:
        return "eval_mode"
    plain = [torch.autograd.grad(F.cross_entropy(model(x), y), params) for x, y in batches]
    soft = [torch.autograd.grad(F.cross_entropy(torch.softmax(model(x), dim=1), y), params) for x, y in batches]

    def same(expected):
        return len(stepped) == len(expected) and all(
            a is not None and torch.allclose(a, b, atol=1e-6)
            for got, want in zip(stepped, expected) for a, b in zip(got, want))

    if same(plain):
        return "ok"
    if same(soft):
        return "softmax_loss"
    return "no_zero_grad"
