def export_pair(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, max_batch: int) -> torch.export.ExportedProgram:
    """Wrong: reads max_batch as the bound on y's rows (B up to max_batch // 2, from 1)."""
    rows = Dim("rows", min=1, max=max_batch // 2)
    return torch.export.export(model, (x, y), dynamic_shapes=({0: rows}, {0: 2 * rows}))
