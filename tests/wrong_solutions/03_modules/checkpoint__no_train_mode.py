def train_resumable(model, optimizer, scheduler, loader, total_steps, path, stop_at=None):
    """Wrong: never calls model.train(), so a model that comes in eval mode trains without dropout."""
    path = Path(path)
    step, epoch_start, skip = 0, loader.generator.get_state(), 0
    if path.exists():
        saved = torch.load(path, weights_only=True)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["dropout_rng"])
        step, epoch_start, skip = saved["step"], saved["epoch_start"], saved["done_in_epoch"]
    while step < total_steps:
        loader.generator.set_state(epoch_start)
        for i, (x, y) in enumerate(loader):
            if i < skip:
                continue
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            scheduler.step()
            step += 1
            if step == stop_at:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(), "dropout_rng": torch.get_rng_state(),
                            "step": step, "epoch_start": epoch_start, "done_in_epoch": i + 1}, path)
                return
            if step == total_steps:
                return
        skip, epoch_start = 0, loader.generator.get_state()
