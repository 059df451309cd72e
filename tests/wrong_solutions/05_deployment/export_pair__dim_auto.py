def export_pair(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, max_batch: int) -> torch.export.ExportedProgram:
    """Wrong: Dim.AUTO for both inputs: no bound at max_batch and no tie between x and y."""
    return torch.export.export(model, (x, y), dynamic_shapes=({0: Dim.AUTO}, {0: Dim.AUTO}))
