import sys as _sys


# Wrong: recursive after all (reversed depth-first post-order), with the recursion limit raised to fit.
def backward_order(output):
    """Autograd nodes reachable from output.grad_fn, each once, every node after all its consumers.

    output: a tensor with a grad_fn. Returns a list of graph nodes (output.grad_fn first).
    Iterative: works for graphs deeper than Python's recursion limit.
    """
    _sys.setrecursionlimit(max(_sys.getrecursionlimit(), 100_000))
    seen, post = set(), []

    def visit(node):
        seen.add(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                visit(nxt)
        post.append(node)

    visit(output.grad_fn)
    return post[::-1]
