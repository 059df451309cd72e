# Wrong: breadth-first order: a node can come before one of its consumers.
def backward_order(output):
    """Autograd nodes reachable from output.grad_fn, each once, every node after all its consumers.

    output: a tensor with a grad_fn. Returns a list of graph nodes (output.grad_fn first).
    Iterative: works for graphs deeper than Python's recursion limit.
    """
    root = output.grad_fn
    order, seen, queue = [], {root}, [root]
    while queue:
        node = queue.pop(0)
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return order
