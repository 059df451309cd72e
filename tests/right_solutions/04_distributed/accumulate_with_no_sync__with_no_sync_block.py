def accumulate_with_no_sync(model: DDP, optimizer: torch.optim.Optimizer, micro_batches: list) -> None:
    """Accumulate averaged micro-batch gradients with one all-reduce (no_sync), then step once."""
    # DDP's documented shape: every micro-batch but the last inside one `with model.no_sync():` block
    # (entered even when it holds none), the last outside it, where its backward all-reduces.
    *first, last = micro_batches
    with model.no_sync():
        for x, y in first:
            (F.mse_loss(model(x), y) / len(micro_batches)).backward()
    x, y = last
    (F.mse_loss(model(x), y) / len(micro_batches)).backward()
    optimizer.step()
