def backward_order(output):
    root = output.grad_fn
    post, done, stack = [], set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            post.append(node)
            continue
        if node in done:
            continue
        done.add(node)
        stack.append((node, True))
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in done:
                stack.append((nxt, False))
    return post[::-1]
