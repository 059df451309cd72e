import torch
from torch.export import Dim

from labutils import deploy


def onnx_max_abs_diff(model, inputs, path):
    """Wrong: averages the absolute difference instead of taking its maximum."""
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (inputs[0],), path, dynamo=True, verbose=False,
                          dynamic_shapes=({0: Dim("batch", min=1, max=4096)},))
    session = deploy.ort_session(path)
    worst = 0.0
    with torch.no_grad():
        for x in inputs:
            (out,) = deploy.ort_run(session, x)
            worst = max(worst, (out - model(x)).abs().mean().item())
    return worst
