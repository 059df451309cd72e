# Wrong: uses .backward(): changes x and writes into x.grad.
def hvp(f, x, v):
    """Hessian-vector product H(x) @ v of scalar function f, by double backward.

    f: callable, tensor shaped like x -> 0-d tensor. x, v: tensors of the same shape.
    Returns a tensor shaped like x, detached (no graph). x and x.grad are left untouched.
    """
    x.requires_grad_()
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    (g * v).sum().backward()
    return x.grad.detach()
