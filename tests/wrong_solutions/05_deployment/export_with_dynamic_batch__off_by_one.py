import torch
from torch.export import Dim


def export_with_dynamic_batch(model, example, max_batch):
    """Wrong: treats max_batch as exclusive, so a batch of exactly max_batch is rejected."""
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch", min=1, max=max_batch - 1)},))
