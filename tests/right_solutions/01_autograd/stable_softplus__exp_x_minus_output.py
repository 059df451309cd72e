class StableSoftplus(Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.maximum(x, torch.zeros_like(x)) + torch.log1p(torch.exp(-torch.abs(x)))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return grad_output * torch.exp(x - y)  # e^x / (1 + e^x) = sigmoid(x), never overflows
