class SafeScale(torch.nn.Module):
    """Rescale ``x`` so that ``max |x| <= limit`` using ``torch.cond`` (exportable)."""

    def __init__(self, limit: float = 1.0):
        super().__init__()
        self.limit = limit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        peak = x.abs().amax()
        return torch.cond(peak > self.limit, lambda t, p: t * self.limit / p, lambda t, p: t.clone(), [x, peak])
