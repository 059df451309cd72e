# Wrong: reads .grad once the epoch has returned and takes gradients cleared by then (None) for a
# correct epoch: an epoch that clears them only after each step lets the planted gradients into
# its first step, yet leaves .grad empty too.
def diagnose(train_epoch):
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 3))
    batches = [(torch.randn(6, 4, generator=g), torch.randint(0, 3, (6,), generator=g)) for _ in range(2)]
    modes = []
    hook = model.register_forward_pre_hook(lambda mod, args: modes.append(mod.training))
    model.eval()
    for p in model.parameters():
        p.grad = torch.full_like(p, 100.0)
    state = torch.get_rng_state()
    train_epoch(model, batches, torch.optim.SGD(model.parameters(), lr=0.0))
    hook.remove()
    if not modes or not all(modes):
        return "eval_mode"
    left = [p.grad for p in model.parameters()]
    if all(gr is None for gr in left):
        return "ok"  # cleared after the last step: assumed cleared before each backward as well
    torch.set_rng_state(state)
    logits = [model(x) for x, _ in batches]
    y = batches[-1][1]
    params = list(model.parameters())
    right = torch.autograd.grad(F.cross_entropy(logits[-1], y), params, retain_graph=True)
    probs = torch.autograd.grad(F.cross_entropy(logits[-1].softmax(dim=1), y), params)

    def matches(grads):
        return all(a is not None and torch.allclose(a, b, atol=1e-6) for a, b in zip(left, grads))

    if matches(right):
        return "ok"
    if matches(probs):
        return "softmax_loss"
    return "no_zero_grad"
