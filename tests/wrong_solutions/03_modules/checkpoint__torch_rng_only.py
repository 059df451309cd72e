def save_checkpoint(path, model, optimizer, scheduler, epoch):
    """Wrong: saves torch's RNG state but not Python's random nor NumPy's."""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": epoch,
                "torch_rng": torch.get_rng_state()}, path)


def load_checkpoint(path, model, optimizer, scheduler):
    """Restores what save_checkpoint wrote."""
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["torch_rng"])
    return state["epoch"]
