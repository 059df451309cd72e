# Wrong: only forward hooks: each leaf gets what was packed since the previous leaf finished,
# which also charges it for ops that ran outside any leaf module.
def saved_bytes_by_module(model, x):
    """Bytes autograd packed during each leaf module's forward in one call model(x)."""
    totals, handles, pending = {}, [], [0]

    def pack(t):
        pending[0] += t.numel() * t.element_size()
        return t

    def done(name):
        def hook(module, args, output):
            totals[name] = totals.get(name, 0) + pending[0]
            pending[0] = 0
        return hook

    for name, module in model.named_modules():
        if not list(module.children()):
            handles.append(module.register_forward_hook(done(name)))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    for handle in handles:
        handle.remove()
    return totals
