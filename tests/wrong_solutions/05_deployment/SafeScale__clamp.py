class SafeScale(torch.nn.Module):
    """Wrong: clamps to [-limit, limit] instead of rescaling the whole tensor."""

    def __init__(self, limit: float = 1.0):
        super().__init__()
        self.limit = limit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        limit = self.limit
        return torch.cond(x.abs().max() > limit, lambda t: t.clamp(-limit, limit), lambda t: t.clone(), (x,))
