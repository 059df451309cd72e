def onnx_max_abs_diff(model: torch.nn.Module, inputs: list[torch.Tensor], path: str) -> float:
    """Wrong: writes the ONNX file, but measures torch.export's program instead of running it in onnxruntime."""
    batch = ({0: Dim("batch", min=1, max=4096)},)
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (inputs[0],), path, dynamo=True, verbose=False, dynamic_shapes=batch)
    program = torch.export.export(model, (inputs[0],), dynamic_shapes=batch).module()
    with torch.no_grad():
        return max((program(x) - model(x)).abs().max().item() for x in inputs)
