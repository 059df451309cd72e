import torch

from labutils import deploy


def onnx_parity(model, inputs, path):
    """Wrong: exports without dynamic_shapes; onnxruntime then rejects the other batch sizes."""
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (inputs[0],), path, dynamo=True, verbose=False)
    session = deploy.ort_session(path)
    worst, same, rows = 0.0, 0, 0
    with torch.no_grad():
        for x in inputs:
            (out,) = deploy.ort_run(session, x)
            ref = model(x)
            worst = max(worst, (out - ref).abs().max().item())
            same += (out.argmax(1) == ref.argmax(1)).sum().item()
            rows += len(x)
    return worst, same / rows
