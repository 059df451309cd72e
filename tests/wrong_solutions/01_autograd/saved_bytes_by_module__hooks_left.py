# Wrong: right numbers, but the module hooks stay registered on the model after the call.
def saved_bytes_by_module(model, x):
    """Bytes autograd packed during each leaf module's forward in one call model(x)."""
    names = {module: name for name, module in model.named_modules() if not list(module.children())}
    running, totals = [], {}

    def enter(module, args):
        running.append(names[module])
        totals.setdefault(names[module], 0)

    def pack(t):
        if running:
            totals[running[-1]] += t.numel() * t.element_size()
        return t

    for module in names:
        module.register_forward_pre_hook(enter)
        module.register_forward_hook(lambda m, a, o: running.pop())
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return totals
