import torch


def export_with_dynamic_batch(model, example, max_batch):
    """Wrong: no dynamic_shapes, so the batch size is frozen to the example's."""
    return torch.export.export(model, (example,))
