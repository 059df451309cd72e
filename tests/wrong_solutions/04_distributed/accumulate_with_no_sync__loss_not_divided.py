def accumulate_with_no_sync(model: DDP, optimizer: torch.optim.Optimizer, micro_batches: list) -> None:
    """Wrong: sums the micro-batch losses instead of averaging them."""
    for index, (x, y) in enumerate(micro_batches):
        if index < len(micro_batches) - 1:
            with model.no_sync():
                F.mse_loss(model(x), y).backward()
        else:
            F.mse_loss(model(x), y).backward()
    optimizer.step()
