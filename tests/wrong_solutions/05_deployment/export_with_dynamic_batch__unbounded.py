import torch
from torch.export import Dim


def export_with_dynamic_batch(model, example, max_batch):
    """Wrong: dynamic batch without the upper bound, so max_batch + 1 is accepted."""
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
