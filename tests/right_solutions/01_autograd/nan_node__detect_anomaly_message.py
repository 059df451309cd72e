import re
import warnings


def nan_node(loss_fn, x):
    xr = x.detach().clone().requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            loss = loss_fn(xr)
            try:
                loss.backward()
            except RuntimeError as error:
                found = re.search(r"Function '(\w+)' returned nan", str(error))
                if found:
                    return found.group(1)
                raise
    return None
