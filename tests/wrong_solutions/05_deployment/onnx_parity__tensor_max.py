def onnx_parity(model: torch.nn.Module, inputs: list[torch.Tensor], path: str) -> tuple[float, float]:
    """Wrong: returns the max difference as a 0-d tensor, not a Python float."""
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (inputs[0],), path, dynamo=True, verbose=False,
                          dynamic_shapes=({0: Dim("batch", min=1, max=4096)},))
    session = deploy.ort_session(path)
    diffs, agree = [], []
    with torch.no_grad():
        for x in inputs:
            (ort_out,) = deploy.ort_run(session, x)
            eager_out = model(x)
            diffs.append((ort_out - eager_out).abs().max())
            agree.append(ort_out.argmax(dim=1) == eager_out.argmax(dim=1))
    return torch.stack(diffs).max(), torch.cat(agree).float().mean().item()
