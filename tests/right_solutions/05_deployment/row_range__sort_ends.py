@torch.library.custom_op("lab05::row_range", mutates_args=())
def row_range(x: torch.Tensor) -> torch.Tensor:
    """``(N, D) -> (N, 2)``: per row ``[min, max]``, computed in NumPy."""
    # Sort each row in NumPy and keep its two ends; the fake kernel is registered by name below.
    ends = np.sort(x.detach().cpu().numpy(), axis=1)[:, [0, -1]]
    return torch.as_tensor(np.ascontiguousarray(ends), dtype=x.dtype, device=x.device)


def _row_range_fake(x):
    return torch.empty((x.shape[0], 2), dtype=x.dtype, device=x.device)


torch.library.register_fake("lab05::row_range", _row_range_fake)
