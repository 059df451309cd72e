import torch

from labutils import deploy


def onnx_max_abs_diff(model, inputs, path):
    """Wrong: exports without dynamic_shapes; onnxruntime then rejects the other batch sizes."""
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (inputs[0],), path, dynamo=True, verbose=False)
    session = deploy.ort_session(path)
    worst = 0.0
    with torch.no_grad():
        for x in inputs:
            (out,) = deploy.ort_run(session, x)
            worst = max(worst, (out - model(x)).abs().max().item())
    return worst
