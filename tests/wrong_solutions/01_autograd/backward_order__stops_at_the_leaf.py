# Wrong: stops at the first leaf (an AccumulateGrad node) it releases, as if the walk ended at "the"
# input. Right on every one-leaf graph, so only graphs with several leaves show it.
from collections import deque


def backward_order(output):
    """Autograd nodes reachable from output.grad_fn, each once, every node after all its consumers.

    output: a tensor with a grad_fn. Returns a list of graph nodes (output.grad_fn first).
    Iterative: works for graphs deeper than Python's recursion limit.
    """
    root = output.grad_fn
    pending, seen, todo = {}, {root}, [root]
    while todo:
        node = todo.pop()
        for nxt, _ in node.next_functions:
            if nxt is not None:
                pending[nxt] = pending.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
    order, queue = [], deque([root])
    while queue:
        node = queue.popleft()
        order.append(node)
        if not node.next_functions and type(node).__name__ == "AccumulateGrad":
            break
        for nxt, _ in node.next_functions:
            if nxt is not None:
                pending[nxt] -= 1
                if pending[nxt] == 0:
                    queue.append(nxt)
    return order
