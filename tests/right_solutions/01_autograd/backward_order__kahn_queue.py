from collections import deque


def backward_order(output):
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
        for nxt, _ in node.next_functions:
            if nxt is not None:
                pending[nxt] -= 1
                if pending[nxt] == 0:
                    queue.append(nxt)
    return order
