def export_pair(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, max_batch: int) -> torch.export.ExportedProgram:
    """Export ``model(x, y)``, ``x`` of shape ``(B, F)``, ``y`` of ``(2B, F)``, B dynamic in ``[2, max_batch]``."""
    # The dynamic dims given per tensor (a ShapesCollection) rather than per argument position.
    batch = torch.export.Dim("batch", min=2, max=max_batch)
    shapes = torch.export.ShapesCollection()
    shapes[x] = {0: batch}
    shapes[y] = {0: 2 * batch}
    return torch.export.export(model, (x, y), dynamic_shapes=shapes)
