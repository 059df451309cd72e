def save_checkpoint(path, model, optimizer, scheduler, epoch):
    """Wrong: forgets the optimizer (Adam's moments restart from zero)."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    torch.save({"model": model.state_dict(), "scheduler": scheduler.state_dict(), "epoch": epoch,
                "torch_rng": torch.get_rng_state(), "python_rng": random.getstate(),
                "numpy_rng": (kind, keys.tolist(), pos, has_gauss, cached)}, path)


def load_checkpoint(path, model, optimizer, scheduler):
    """Restores what save_checkpoint wrote."""
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["torch_rng"])
    random.setstate(state["python_rng"])
    kind, keys, pos, has_gauss, cached = state["numpy_rng"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    return state["epoch"]
