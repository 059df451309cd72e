def save_checkpoint(path, model, optimizer, scheduler, epoch):
    """Wrong: saves model, optimizer, scheduler and epoch, but no RNG state."""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": epoch}, path)


def load_checkpoint(path, model, optimizer, scheduler):
    """Restores what save_checkpoint wrote."""
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    return state["epoch"]
