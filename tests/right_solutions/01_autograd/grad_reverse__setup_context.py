class GradReverse(Function):
    # the forward/setup_context split of torch.autograd.Function: forward takes no ctx
    @staticmethod
    def forward(x, lambd):
        return x * 1.0

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, lambd = inputs
        ctx.lambd = lambd

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg().mul(ctx.lambd), None


def grad_reverse(x, lambd=1.0):
    return GradReverse.apply(x, lambd)
