# Wrong: the second pass is .backward() on the detached copy (the exercise says torch.autograd.grad).
def hvp(f, x, v):
    """Hessian-vector product H(x) @ v of scalar function f, by double backward.

    f: callable, tensor shaped like x -> 0-d tensor. x, v: tensors of the same shape.
    Returns a tensor shaped like x, detached (no graph). x and x.grad are left untouched.
    """
    xg = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(xg), xg, create_graph=True)
    (g * v).sum().backward()
    return xg.grad.detach()
