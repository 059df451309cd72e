@torch.library.custom_op("lab05::row_range", mutates_args=())
def row_range(x: torch.Tensor) -> torch.Tensor:
    """Wrong: computes in float64 and returns float64 for float32 inputs."""
    a = x.detach().cpu().numpy().astype(np.float64)
    return torch.from_numpy(np.column_stack([a.min(1), a.max(1)])).to(x.device)


@row_range.register_fake
def _(x):
    return x.new_empty(x.shape[0], 2)
