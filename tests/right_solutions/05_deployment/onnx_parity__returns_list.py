def onnx_parity(model: torch.nn.Module, inputs: list[torch.Tensor], path: str) -> tuple[float, float]:
    """``(max |onnxruntime - eager|, fraction of rows with the same argmax)`` over all ``inputs``."""
    # The pair as a list: unpacked as `diff, agreement = onnx_parity(...)` it is the same answer.
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (inputs[0],), path, dynamo=True,
                          dynamic_shapes=({0: Dim("batch", min=1, max=1 << 16)},))
    session = deploy.ort_session(path)
    diffs, agree, rows = [], 0, 0
    with torch.no_grad():
        for x in inputs:
            (exported,) = deploy.ort_run(session, x)
            eager = model(x)
            diffs.append((exported - eager).abs().amax().item())
            agree += (exported.argmax(dim=1) == eager.argmax(dim=1)).sum().item()
            rows += len(x)
    return [max(diffs), agree / rows]
