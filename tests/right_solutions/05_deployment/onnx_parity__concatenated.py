def onnx_parity(model: torch.nn.Module, inputs: list[torch.Tensor], path: str) -> tuple[float, float]:
    """``(max |onnxruntime - eager|, fraction of rows with the same argmax)`` over all ``inputs``."""
    import onnxruntime as ort
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (inputs[0],), path, dynamo=True,
                          dynamic_shapes=({0: torch.export.Dim.DYNAMIC},))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    ort_all = torch.cat([torch.from_numpy(sess.run(None, {name: x.numpy()})[0]) for x in inputs])
    with torch.no_grad():
        eager_all = torch.cat([model(x) for x in inputs])
    diff = (ort_all - eager_all).abs().max().item()
    agreement = (ort_all.argmax(1) == eager_all.argmax(1)).double().mean().item()
    return float(diff), float(agreement)
