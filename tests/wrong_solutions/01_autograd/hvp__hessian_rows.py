# Wrong: forms the Hessian row by row with torch.autograd.grad, then multiplies (the exercise: never form it).
def hvp(f, x, v):
    """Hessian-vector product H(x) @ v of scalar function f, by double backward.

    f: callable, tensor shaped like x -> 0-d tensor. x, v: tensors of the same shape.
    Returns a tensor shaped like x, detached (no graph). x and x.grad are left untouched.
    """
    xg = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(f(xg), xg, create_graph=True)
    flat = g.reshape(-1)
    rows = [torch.autograd.grad(flat[i], xg, retain_graph=True)[0].reshape(-1) for i in range(flat.numel())]
    return (torch.stack(rows) @ v.reshape(-1)).reshape(x.shape).detach()
