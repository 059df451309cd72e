import torch
from torch.export import Dim


def export_pair(model, x, y, max_batch):
    """Wrong: treats max_batch as exclusive, so a batch of exactly max_batch is rejected."""
    rows = Dim("rows", min=2, max=max_batch - 1)
    return torch.export.export(model, (x, y), dynamic_shapes=({0: rows}, {0: 2 * rows}))
