# Wrong: stable forward, but exp(x) / (1 + exp(x)) in backward gives nan for large x.
class StableSoftplus(Function):
    """softplus(x) = log(1 + exp(x)) as an autograd Function; finite for every finite x.

    StableSoftplus.apply(x) -> tensor like x. Backward: grad_output * sigmoid(x).
    """

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.exp(x) / (1 + torch.exp(x))
