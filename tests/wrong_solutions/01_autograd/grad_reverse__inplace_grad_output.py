# Wrong: negates grad_output in place; autograd may hand the same tensor to another branch
# (an add sends one gradient to both inputs), so a second reversal layer sees it already scaled.
class GradReverse(Function):
    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.mul_(-ctx.lambd), None


def grad_reverse(x, lambd=1.0):
    return GradReverse.apply(x, lambd)
