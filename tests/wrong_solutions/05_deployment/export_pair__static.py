import torch


def export_pair(model, x, y, max_batch):
    """Wrong: no dynamic_shapes, so the program only accepts the example's batch size."""
    return torch.export.export(model, (x, y))
