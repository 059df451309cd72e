def accumulate_with_no_sync(model: DDP, optimizer: torch.optim.Optimizer, micro_batches: list) -> None:
    """Wrong: the first backward all-reduces and the later ones run under no_sync: the last micro-batches are never synchronised."""
    count = len(micro_batches)
    for index, (x, y) in enumerate(micro_batches):
        if index == 0:
            (F.mse_loss(model(x), y) / count).backward()
        else:
            with model.no_sync():
                (F.mse_loss(model(x), y) / count).backward()
    optimizer.step()
