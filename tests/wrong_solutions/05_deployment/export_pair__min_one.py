import torch
from torch.export import Dim


def export_pair(model, x, y, max_batch):
    """Wrong: the batch may start at 1, not at 2 as asked (the program's ranges say [1, max_batch])."""
    rows = Dim("rows", min=1, max=max_batch)
    return torch.export.export(model, (x, y), dynamic_shapes=({0: rows}, {0: 2 * rows}))
