# Wrong: a one-sided (forward) difference, error O(eps) instead of O(eps^2).
def numerical_gradient(f, x, eps=1e-6):
    """Central-difference gradient of a scalar function.

    f: callable taking a tensor shaped like x and returning a 0-d tensor (or a float).
    x: the point, a floating tensor (float64 recommended); it is not modified.
    eps: the step h in (f(x + h e_i) - f(x - h e_i)) / (2 h).
    Returns a tensor shaped like x, same dtype, holding df/dx_i in element i.
    """
    work = x.detach().contiguous().clone()
    flat = work.view(-1)
    grad = torch.empty_like(flat)
    for i in range(flat.numel()):
        original = flat[i].item()
        flat[i] = original + eps
        plus = float(f(work))
        flat[i] = original
        minus = float(f(work))
        grad[i] = (plus - minus) / eps
    return grad.view(x.shape)
