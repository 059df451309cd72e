def export_pair(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, max_batch: int) -> torch.export.ExportedProgram:
    """Export ``model(x, y)``, ``x`` of shape ``(B, F)``, ``y`` of ``(2B, F)``, B dynamic in ``[2, max_batch]``."""
    batch = torch.export.Dim("batch", min=2, max=max_batch)
    return torch.export.export(model, args=(x, y), dynamic_shapes={"x": {0: batch}, "y": {0: batch * 2}})
