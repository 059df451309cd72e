import torch
from torch.export import Dim

from labutils import deploy


def onnx_max_abs_diff(model, inputs, path):
    """Wrong: exports correctly but compares only the example batch."""
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (inputs[0],), path, dynamo=True, verbose=False,
                          dynamic_shapes=({0: Dim("batch", min=1, max=4096)},))
    session = deploy.ort_session(path)
    with torch.no_grad():
        (out,) = deploy.ort_run(session, inputs[0])
        return (out - model(inputs[0])).abs().max().item()
