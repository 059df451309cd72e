def numerical_gradient(f, x, eps=1e-6):
    base = x.detach().clone()
    grad = torch.zeros(base.numel(), dtype=x.dtype)
    for i in range(base.numel()):
        step = torch.zeros(base.numel(), dtype=x.dtype)
        step[i] = eps
        step = step.reshape(x.shape)
        grad[i] = (float(f(base + step)) - float(f(base - step))) / (2 * eps)
    return grad.reshape(x.shape)
