# Wrong: asks autograd instead of calling f (fails when f is not differentiable).
def numerical_gradient(f, x, eps=1e-6):
    """Central-difference gradient of a scalar function.

    f: callable taking a tensor shaped like x and returning a 0-d tensor (or a float).
    x: the point, a floating tensor (float64 recommended); it is not modified.
    eps: the step h in (f(x + h e_i) - f(x - h e_i)) / (2 h).
    Returns a tensor shaped like x, same dtype, holding df/dx_i in element i.
    """
    xr = x.detach().clone().requires_grad_()
    (grad,) = torch.autograd.grad(f(xr), xr)
    return grad
