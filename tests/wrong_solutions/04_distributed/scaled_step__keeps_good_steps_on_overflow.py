def scaled_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, state: dict) -> bool:
    """Wrong: halves the scale on overflow but does not reset good_steps."""
    (loss * state["scale"]).backward()
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    for grad in grads:
        grad.div_(state["scale"])
    if not all(bool(torch.isfinite(g).all()) for g in grads):
        state["scale"] /= 2
        return False
    optimizer.step()
    state["good_steps"] += 1
    if state["good_steps"] == state["growth_interval"]:
        state["scale"] *= 2.0
        state["good_steps"] = 0
    return True
