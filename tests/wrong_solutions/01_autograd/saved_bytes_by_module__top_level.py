# Wrong: attributes bytes to the top-level children (features, classifier), not to the leaf modules.
def saved_bytes_by_module(model, x):
    """Bytes autograd packed during each leaf module's forward in one call model(x)."""
    running, totals, handles = [], {}, []
    for name, module in model.named_children():
        totals[name] = 0
        handles.append(module.register_forward_pre_hook(lambda m, a, name=name: running.append(name)))
        handles.append(module.register_forward_hook(lambda m, a, o: running.pop()))

    def pack(t):
        if running:
            totals[running[-1]] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    for handle in handles:
        handle.remove()
    return totals
