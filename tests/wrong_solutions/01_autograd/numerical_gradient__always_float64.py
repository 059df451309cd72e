# Wrong: accumulates into a float64 buffer "for accuracy" and returns it: a float32 x gets a float64 gradient.
def numerical_gradient(f, x, eps=1e-6):
    work = x.detach().clone().contiguous()
    flat = work.view(-1)
    grad = torch.zeros(flat.numel(), dtype=torch.float64)
    for i in range(flat.numel()):
        original = flat[i].item()
        flat[i] = original + eps
        plus = float(f(work))
        flat[i] = original - eps
        minus = float(f(work))
        flat[i] = original
        grad[i] = (plus - minus) / (2 * eps)
    return grad.view(x.shape)
