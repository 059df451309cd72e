def saved_bytes_by_module(model, x):
    # global module hooks, and a running count of packed bytes: a leaf is charged the difference
    # between the count when its forward ends and when it began
    from torch.nn.modules import module as module_hooks

    leaves = {m: name for name, m in model.named_modules() if next(m.children(), None) is None}
    packed = [0]
    started = {}
    totals = {}

    def pack(t):
        packed[0] += t.numel() * t.element_size()
        return t

    def before(m, args):
        if m in leaves:
            started[m] = packed[0]
            totals.setdefault(leaves[m], 0)

    def after(m, args, output):
        if m in leaves:
            totals[leaves[m]] += packed[0] - started.pop(m)

    handles = [module_hooks.register_module_forward_pre_hook(before),
               module_hooks.register_module_forward_hook(after)]
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return totals
