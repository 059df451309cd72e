# Wrong: asks torch.func for H v (forward over reverse) instead of two torch.autograd.grad passes.
def hvp(f, x, v):
    """Hessian-vector product H(x) @ v of scalar function f, by double backward.

    f: callable, tensor shaped like x -> 0-d tensor. x, v: tensors of the same shape.
    Returns a tensor shaped like x, detached (no graph). x and x.grad are left untouched.
    """
    _, hv = torch.func.jvp(torch.func.grad(f), (x.detach(),), (v,))
    return hv.detach()
