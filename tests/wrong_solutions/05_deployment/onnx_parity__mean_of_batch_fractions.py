import torch
from torch.export import Dim

from labutils import deploy


def onnx_parity(model, inputs, path):
    """Wrong: averages each batch's agreement, so a batch of 1 row weighs as much as a batch of 13."""
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (inputs[0],), path, dynamo=True, verbose=False,
                          dynamic_shapes=({0: Dim("batch")},))
    session = deploy.ort_session(path)
    diffs, fractions = [], []
    with torch.no_grad():
        for x in inputs:
            (out,) = deploy.ort_run(session, x)
            ref = model(x)
            diffs.append((out - ref).abs().max().item())
            fractions.append((out.argmax(1) == ref.argmax(1)).float().mean().item())
    return max(diffs), sum(fractions) / len(fractions)
