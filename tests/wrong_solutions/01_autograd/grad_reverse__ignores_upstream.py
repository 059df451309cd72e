# Wrong: "the derivative of the identity is 1", so backward returns -lambd * ones, dropping grad_output.
class GradReverse(Function):
    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return -ctx.lambd * torch.ones_like(grad_output), None


def grad_reverse(x, lambd=1.0):
    return GradReverse.apply(x, lambd)
