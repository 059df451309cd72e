import torch
from torch.export import Dim


def export_with_dynamic_batch(model, example, max_batch):
    """Wrong: lower bound 2, so a single-sample batch is rejected."""
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch", min=2, max=max_batch)},))
