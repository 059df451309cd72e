# Wrong: avoids the overflow by clamping the exponent, so softplus(x) is stuck at ~80 for x > 80.
class StableSoftplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log1p(torch.exp(x.clamp(max=80)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)
