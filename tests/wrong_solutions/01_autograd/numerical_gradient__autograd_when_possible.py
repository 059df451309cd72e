# Wrong: autograd whenever f allows it (plus the central-difference error of a cubic), differences otherwise.
def numerical_gradient(f, x, eps=1e-6):
    """Central-difference gradient of a scalar function.

    f: callable taking a tensor shaped like x and returning a 0-d tensor (or a float).
    x: the point, a floating tensor (float64 recommended); it is not modified.
    eps: the step h in (f(x + h e_i) - f(x - h e_i)) / (2 h).
    Returns a tensor shaped like x, same dtype, holding df/dx_i in element i.
    """
    work = x.detach().contiguous().clone()
    try:
        xr = work.clone().requires_grad_()
        (grad,) = torch.autograd.grad(f(xr), xr)
        if eps < 1e-4:
            return grad.reshape(x.shape)
    except (RuntimeError, TypeError):
        pass
    flat = work.view(-1)
    out = torch.empty_like(flat)
    for i in range(flat.numel()):
        original = flat[i].item()
        flat[i] = original + eps
        plus = float(f(work))
        flat[i] = original - eps
        minus = float(f(work))
        flat[i] = original
        out[i] = (plus - minus) / (2 * eps)
    return out.view(x.shape)
