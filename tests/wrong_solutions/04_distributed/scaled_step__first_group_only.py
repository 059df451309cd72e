# Wrong: unscales (and checks) the first parameter group only.
def scaled_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, state: dict) -> bool:
    """Scaled backward, unscale in place, skip+halve on inf/NaN, else step (+ grow); returns whether it stepped."""
    (loss * state["scale"]).backward()
    grads = [p.grad for p in optimizer.param_groups[0]["params"] if p.grad is not None]
    finite = True
    for grad in grads:
        grad.div_(state["scale"])
        finite = finite and bool(torch.isfinite(grad).all())
    if not finite:
        state["scale"] *= 0.5
        state["good_steps"] = 0
        return False
    optimizer.step()
    state["good_steps"] += 1
    if state["good_steps"] == state["growth_interval"]:
        state["scale"] *= 2.0
        state["good_steps"] = 0
    return True
