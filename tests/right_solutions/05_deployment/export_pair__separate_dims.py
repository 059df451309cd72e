def export_pair(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, max_batch: int) -> torch.export.ExportedProgram:
    """Export ``model(x, y)``, ``x`` of shape ``(B, F)``, ``y`` of ``(2B, F)``, B dynamic in ``[2, max_batch]``."""
    # One Dim per input, each with exactly its own bounds; the model's slicing relates them (y[0::2] and
    # y[1::2] must both have B rows), which export then checks at run time.
    rows_x = Dim("rows_x", min=2, max=max_batch)
    rows_y = Dim("rows_y", min=4, max=2 * max_batch)
    return torch.export.export(model, (x, y), dynamic_shapes=({0: rows_x}, {0: rows_y}))
