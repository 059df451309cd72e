import torch
from torch.export import Dim

from labutils import deploy


def onnx_parity(model, inputs, path):
    """Wrong: argmax() without dim=1 compares the single largest logit of the whole batch, not each row's class."""
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (inputs[0],), path, dynamo=True, verbose=False,
                          dynamic_shapes=({0: Dim("batch", min=1, max=1024)},))
    session = deploy.ort_session(path)
    worst, same, rows = 0.0, 0, 0
    with torch.no_grad():
        for x in inputs:
            (out,) = deploy.ort_run(session, x)
            ref = model(x)
            worst = max(worst, (out - ref).abs().max().item())
            if out.argmax() == ref.argmax():
                same += len(x)
            rows += len(x)
    return worst, same / rows
