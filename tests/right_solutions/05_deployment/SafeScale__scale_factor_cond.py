class SafeScale(torch.nn.Module):
    """Rescale ``x`` so that ``max |x| <= limit`` using ``torch.cond`` (exportable)."""

    def __init__(self, limit: float = 1.0):
        super().__init__()
        self.limit = limit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The cond picks a scale factor (a 0-d tensor), not the output: limit / peak above the limit, 1
        # otherwise (x * 1.0 is x exactly, and its gradient the identity); the product is taken outside.
        peak = x.abs().max()
        factor = torch.cond(peak > self.limit, lambda p: self.limit / p, lambda p: torch.ones_like(p), (peak,))
        return x * factor
