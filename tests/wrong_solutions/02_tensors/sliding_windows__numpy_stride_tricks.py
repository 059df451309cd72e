import numpy as _np


def sliding_windows(x, size, step):
    """Wrong: NumPy's as_strided over x's memory, not torch.as_strided (same values, same memory)."""
    count = (x.shape[0] - size) // step + 1
    item = x.element_size()
    whole = x.detach().as_strided((x.untyped_storage().nbytes() // item,), (1,), 0).numpy()
    windows = _np.lib.stride_tricks.as_strided(whole[x.storage_offset():], (count, size),
                                               (step * x.stride(0) * item, x.stride(0) * item))
    return torch.from_numpy(windows)
