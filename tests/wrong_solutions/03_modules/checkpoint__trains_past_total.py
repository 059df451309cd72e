def train_resumable(model, optimizer, scheduler, loader, total_steps, path, stop_at=None):
    """Wrong: resumed from a checkpoint taken after the last step (stop_at == total_steps), it trains
    the rest of that epoch: seen passes total_steps without ever equalling it after a step."""
    # Keep the loader generator's state from before the first epoch; a resumed run replays the
    # loader from there, skipping the batches already trained on (the same draws happen again).
    path = Path(path)
    origin, done, rng = loader.generator.get_state(), 0, None
    if path.exists():
        saved = torch.load(path, weights_only=True)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        origin, done, rng = saved["origin"], int(saved["done"]), saved["rng"]
    loader.generator.set_state(origin)
    if rng is not None:
        torch.set_rng_state(rng)
    model.train()
    seen = 0
    while seen < total_steps:
        for x, y in loader:
            seen += 1
            if seen <= done:
                continue
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            scheduler.step()
            if seen == stop_at:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(), "origin": origin, "done": seen,
                            "rng": torch.get_rng_state()}, path)
                return
            if seen == total_steps:
                return
