# Wrong: computes in float64 "to be safe" and never casts back, so a float32 input gets a float64 output.
class StableSoftplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        x64 = x.double()
        return x64.clamp(min=0) + torch.log1p(torch.exp(-x64.abs()))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x.double())
