class SafeScale(torch.nn.Module):
    """Wrong: the unchanged branch returns its input itself (torch.cond refuses an aliased output)."""

    def __init__(self, limit: float = 1.0):
        super().__init__()
        self.limit = limit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        limit = self.limit
        return torch.cond(x.abs().max() > limit, lambda t: t * (limit / t.abs().max()), lambda t: t, (x,))
