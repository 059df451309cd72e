# Wrong: log(1 + e^-|x|) instead of log1p: finite everywhere, but 1 + e^-|x| rounds to 1 once |x| is
# past ~37 (float64) or ~17 (float32), so the tail softplus(-500) = 7e-218 comes back as exactly 0.
class StableSoftplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0) + torch.log(1 + torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)
