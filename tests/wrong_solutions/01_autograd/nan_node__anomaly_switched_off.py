# Wrong: switches anomaly mode on and, at the end, off: right when the caller had it off, but a caller
# who had it on finds it off.
import re
import warnings


def nan_node(loss_fn, x):
    xr = x.detach().clone().requires_grad_(True)
    torch.autograd.set_detect_anomaly(True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = loss_fn(xr)
            try:
                loss.backward()
            except RuntimeError as error:
                found = re.search(r"Function '(\w+)' returned nan", str(error))
                if found:
                    return found.group(1)
                raise
        return None
    finally:
        torch.autograd.set_detect_anomaly(False)
