# Wrong: depth-first pre-order: a shared node is emitted before all its consumers.
def backward_order(output):
    """Autograd nodes reachable from output.grad_fn, each once, every node after all its consumers.

    output: a tensor with a grad_fn. Returns a list of graph nodes (output.grad_fn first).
    Iterative: works for graphs deeper than Python's recursion limit.
    """
    root = output.grad_fn
    order, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return order
