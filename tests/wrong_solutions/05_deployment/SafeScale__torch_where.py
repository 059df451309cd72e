import torch


class SafeScale(torch.nn.Module):
    """Wrong: right values with torch.where, but no torch.cond in the exported graph."""

    def __init__(self, limit: float = 1.0):
        super().__init__()
        self.limit = limit

    def forward(self, x):
        peak = x.abs().max()
        return torch.where(peak > self.limit, x * (self.limit / peak), x)
