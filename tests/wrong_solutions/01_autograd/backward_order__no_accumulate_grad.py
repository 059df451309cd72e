# Wrong: leaves out the AccumulateGrad nodes ("they are the leaves, not ops"); the prompt includes them.
def backward_order(output):
    root = output.grad_fn
    consumers = {root: 0}
    stack = [root]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt not in consumers:
                consumers[nxt] = 0
                stack.append(nxt)
            consumers[nxt] += 1
    order, ready = [], [root]
    while ready:
        node = ready.pop()
        if type(node).__name__ != "AccumulateGrad":
            order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            consumers[nxt] -= 1
            if consumers[nxt] == 0:
                ready.append(nxt)
    return order
