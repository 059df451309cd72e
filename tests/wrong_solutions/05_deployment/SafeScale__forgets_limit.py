class SafeScale(torch.nn.Module):
    """Wrong: rescales to a peak of 1 instead of the limit."""

    def __init__(self, limit: float = 1.0):
        super().__init__()
        self.limit = limit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.abs().max() > self.limit, lambda t: t / t.abs().max(), lambda t: t.clone(), (x,))
