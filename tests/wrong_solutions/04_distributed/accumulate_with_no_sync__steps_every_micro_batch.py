def accumulate_with_no_sync(model: DDP, optimizer: torch.optim.Optimizer, micro_batches: list) -> None:
    """Wrong: calls optimizer.step() after every micro-batch."""
    count = len(micro_batches)
    for index, (x, y) in enumerate(micro_batches):
        if index < count - 1:
            with model.no_sync():
                (F.mse_loss(model(x), y) / count).backward()
                optimizer.step()
        else:
            (F.mse_loss(model(x), y) / count).backward()
            optimizer.step()
