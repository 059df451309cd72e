import itertools


def numerical_gradient(f, x, eps=1e-6):
    point = x.detach().clone()
    grad = torch.zeros_like(point)
    # walk x's own multi-indices (no flattening); each difference starts from two fresh copies of x
    for index in itertools.product(*(range(n) for n in point.shape)):
        up, down = point.clone(), point.clone()
        up[index] += eps
        down[index] -= eps
        grad[index] = (float(f(up)) - float(f(down))) / (2 * eps)
    return grad
