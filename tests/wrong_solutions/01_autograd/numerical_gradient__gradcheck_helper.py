# Wrong: central differences, but taken by torch.autograd.gradcheck's helper instead of by calls to f.
def numerical_gradient(f, x, eps=1e-6):
    """Central-difference gradient of a scalar function.

    f: callable taking a tensor shaped like x and returning a 0-d tensor (or a float).
    x: the point, a floating tensor (float64 recommended); it is not modified.
    eps: the step h in (f(x + h e_i) - f(x - h e_i)) / (2 h).
    Returns a tensor shaped like x, same dtype, holding df/dx_i in element i.
    """
    from torch.autograd.gradcheck import _get_numerical_jacobian

    work = x.detach().contiguous().clone().requires_grad_()
    jacobian = _get_numerical_jacobian(lambda t: torch.as_tensor(f(t.detach()), dtype=x.dtype).reshape(1),
                                       (work,), eps=eps)
    return jacobian[0][0].reshape(x.shape).detach()
