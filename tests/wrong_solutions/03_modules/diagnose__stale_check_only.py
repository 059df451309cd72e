# Wrong: plants NaN gradients and calls it "no_zero_grad" only if NaN survives, so an epoch that
# zeroes once before its loop (and then accumulates) is taken for a softmax bug.
def diagnose(train_epoch):
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 3))
    batches = [(torch.randn(6, 4, generator=g), torch.randint(0, 3, (6,), generator=g)) for _ in range(2)]
    modes = []
    hook = model.register_forward_pre_hook(lambda mod, args: modes.append(mod.training))
    model.eval()
    for p in model.parameters():
        p.grad = torch.full_like(p, float("nan"))
    state = torch.get_rng_state()
    train_epoch(model, batches, torch.optim.SGD(model.parameters(), lr=0.0))
    hook.remove()
    if not modes or not all(modes):
        return "eval_mode"
    left = [p.grad for p in model.parameters()]
    if any(gr is None or torch.isnan(gr).any() for gr in left):
        return "no_zero_grad"
    torch.set_rng_state(state)
    logits = [model(x) for x, _ in batches]
    right = torch.autograd.grad(F.cross_entropy(logits[-1], batches[-1][1]), list(model.parameters()))
    if all(torch.allclose(a, b, atol=1e-6) for a, b in zip(left, right)):
        return "ok"
    return "softmax_loss"
