@torch.library.custom_op("lab05::row_range", mutates_args=())
def row_range(x: torch.Tensor) -> torch.Tensor:
    """Wrong: the fake kernel calls int() on the symbolic row count, which specialises it."""
    a = x.detach().cpu().numpy()
    both = np.stack([a.min(axis=1), a.max(axis=1)], axis=1)
    return torch.from_numpy(both).to(x.device)


@row_range.register_fake
def _(x):
    return torch.empty((int(x.shape[0]), 2), dtype=x.dtype, device=x.device)
