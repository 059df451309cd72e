class GradReverse(Function):
    @staticmethod
    def forward(ctx, x, lambd):
        ctx.scale = -float(lambd)
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale, None


def grad_reverse(x, lambd=1.0):
    return GradReverse.apply(x, lambd)
