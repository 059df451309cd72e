def train_resumable(model, optimizer, scheduler, loader, total_steps, path, stop_at=None):
    # Only the global step is saved, with the generator state at the start of the epoch it falls
    # in: the position inside that epoch is step % len(loader), and islice skips the batches done.
    # At an epoch's end the next epoch starts from the generator's state now.
    import itertools

    path = Path(path)
    per_epoch = len(loader)
    step = 0
    if path.exists():
        saved = torch.load(path, weights_only=True)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["torch_rng"])
        loader.generator.set_state(saved["epoch_generator"])
        step = int(saved["step"])
    model.train()
    while step < total_steps:
        epoch_generator = loader.generator.get_state()
        for x, y in itertools.islice(loader, step % per_epoch, None):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            scheduler.step()
            step += 1
            if step == stop_at:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(), "torch_rng": torch.get_rng_state(),
                            "epoch_generator": epoch_generator if step % per_epoch else loader.generator.get_state(),
                            "step": step}, path)
                return
            if step == total_steps:
                return
