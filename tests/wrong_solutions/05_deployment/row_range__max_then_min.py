@torch.library.custom_op("lab05::row_range", mutates_args=())
def row_range(x: torch.Tensor) -> torch.Tensor:
    """Wrong: columns [max, min] instead of [min, max]."""
    a = x.detach().cpu().numpy()
    return torch.from_numpy(np.stack([a.max(axis=1), a.min(axis=1)], axis=1)).to(x.device)


@row_range.register_fake
def _(x):
    return x.new_empty(x.shape[0], 2)
