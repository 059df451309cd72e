def scaled_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, state: dict) -> bool:
    """Wrong: halves the scale on overflow but never grows it back."""
    (loss * state["scale"]).backward()
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    for grad in grads:
        grad.div_(state["scale"])
    if not all(bool(torch.isfinite(grad).all()) for grad in grads):
        state["scale"] *= 0.5
        return False
    optimizer.step()
    return True
