# Wrong: keeps lambd on the class, so the last call's value wins.
class GradReverse(Function):
    """Identity forward; backward returns -lambd * grad_output for x (and None for lambd)."""

    @staticmethod
    def forward(ctx, x, lambd):
        GradReverse.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return -GradReverse.lambd * grad_output, None


def grad_reverse(x, lambd=1.0):
    """Apply gradient reversal with factor lambd (a float) to tensor x."""
    return GradReverse.apply(x, lambd)
