# Wrong: a correct order, but recursive: RecursionError on a 10,000-op chain.
def backward_order(output):
    """Autograd nodes reachable from output.grad_fn, each once, every node after all its consumers.

    output: a tensor with a grad_fn. Returns a list of graph nodes (output.grad_fn first).
    Iterative: works for graphs deeper than Python's recursion limit.
    """
    seen, post = set(), []

    def visit(node):
        seen.add(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                visit(nxt)
        post.append(node)

    visit(output.grad_fn)
    return post[::-1]
