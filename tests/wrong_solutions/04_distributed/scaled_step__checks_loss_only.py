def scaled_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, state: dict) -> bool:
    """Wrong: skips the step only when the loss is not finite; an inf in one gradient is stepped on."""
    (loss * state["scale"]).backward()
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                p.grad.div_(state["scale"])
    if not bool(torch.isfinite(loss)):
        state["scale"] /= 2
        state["good_steps"] = 0
        return False
    optimizer.step()
    state["good_steps"] += 1
    if state["good_steps"] == state["growth_interval"]:
        state["scale"] *= 2.0
        state["good_steps"] = 0
    return True
