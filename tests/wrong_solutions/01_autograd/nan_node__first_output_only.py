# Wrong: looks only at a node's first output (grad_inputs[0]); a NaN born in the gradient of an op's
# second input is noticed one node later.
def nan_node(loss_fn, x):
    xr = x.detach().clone().requires_grad_()
    born = []
    loss = loss_fn(xr)
    seen, todo = set(), [loss.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        node.register_hook(lambda gi, go, name=type(node).__name__: born.append(name)
                           if gi and gi[0] is not None and torch.isnan(gi[0]).any() else None)
        todo.extend(n for n, _ in node.next_functions)
    loss.backward()
    return born[0] if born else None
