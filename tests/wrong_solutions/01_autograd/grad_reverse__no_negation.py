# Wrong: scales the gradient but does not negate it.
class GradReverse(Function):
    """Identity forward; backward returns -lambd * grad_output for x (and None for lambd)."""

    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return ctx.lambd * grad_output, None


def grad_reverse(x, lambd=1.0):
    """Apply gradient reversal with factor lambd (a float) to tensor x."""
    return GradReverse.apply(x, lambd)
