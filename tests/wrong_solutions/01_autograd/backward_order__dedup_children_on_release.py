# Wrong: counts consumers per edge but releases each distinct child once per node (a set),
# so an input used twice by one op (x * x) is never released.
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
        order.append(node)
        for nxt in {n for n, _ in node.next_functions if n is not None}:
            consumers[nxt] -= 1
            if consumers[nxt] == 0:
                ready.append(nxt)
    return order
