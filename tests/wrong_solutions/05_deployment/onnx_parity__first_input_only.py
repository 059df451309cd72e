import torch
from torch.export import Dim

from labutils import deploy


def onnx_parity(model, inputs, path):
    """Wrong: checks the example batch only; the other batch sizes are never run."""
    x = inputs[0]
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (x,), path, dynamo=True, verbose=False, dynamic_shapes=({0: Dim("batch")},))
    (out,) = deploy.ort_run(deploy.ort_session(path), x)
    with torch.no_grad():
        ref = model(x)
    return (out - ref).abs().max().item(), (out.argmax(1) == ref.argmax(1)).float().mean().item()
