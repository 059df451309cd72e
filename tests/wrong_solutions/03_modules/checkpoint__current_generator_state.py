def train_resumable(model, optimizer, scheduler, loader, total_steps, path, stop_at=None):
    """Wrong: saves the loader generator's state at the moment of the stop (after this epoch's shuffle was drawn)."""
    path = Path(path)
    step, epoch_start = 0, loader.generator.get_state()
    if path.exists():
        saved = torch.load(path, weights_only=True)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["dropout_rng"])
        step, epoch_start, skip = saved["step"], saved["epoch_start"], saved["done_in_epoch"]
    else:
        skip = 0
    model.train()
    while step < total_steps:
        loader.generator.set_state(epoch_start)  # this epoch's shuffle is drawn from here
        for i, (x, y) in enumerate(loader):
            if i < skip:  # trained on before the checkpoint (all of them if it was the epoch's end)
                continue
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            scheduler.step()
            step += 1
            if step == stop_at:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(), "dropout_rng": torch.get_rng_state(),
                            "step": step, "epoch_start": loader.generator.get_state(), "done_in_epoch": i + 1}, path)
                return
            if step == total_steps:
                return
        skip, epoch_start = 0, loader.generator.get_state()
