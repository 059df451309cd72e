# Wrong: scales the step by |x_i| (a "relative" step, as some libraries do); the prompt says h = eps.
def numerical_gradient(f, x, eps=1e-6):
    work = x.detach().clone().contiguous()
    flat = work.view(-1)
    grad = torch.empty_like(flat)
    for i in range(flat.numel()):
        original = flat[i].item()
        h = eps * max(1.0, abs(original))
        flat[i] = original + h
        plus = float(f(work))
        flat[i] = original - h
        minus = float(f(work))
        flat[i] = original
        grad[i] = (plus - minus) / (2 * h)
    return grad.view(x.shape)
