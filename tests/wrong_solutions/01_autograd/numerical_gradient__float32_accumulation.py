# Wrong: takes the differences in float32 and casts back, so a float64 x gets a float32-accurate gradient.
def numerical_gradient(f, x, eps=1e-6):
    x32 = x.detach().to(torch.float32)
    grad = torch.zeros_like(x32)
    flat, out = x32.reshape(-1), grad.reshape(-1)
    for i in range(flat.numel()):
        step = torch.zeros_like(flat)
        step[i] = eps
        up = float(f((flat + step).reshape(x.shape).to(x.dtype)))
        down = float(f((flat - step).reshape(x.shape).to(x.dtype)))
        out[i] = (up - down) / (2 * eps)
    return grad.to(x.dtype)
