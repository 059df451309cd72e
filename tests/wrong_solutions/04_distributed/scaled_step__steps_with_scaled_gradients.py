def scaled_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, state: dict) -> bool:
    """Wrong: checks unscaled copies but steps with the still-scaled gradients."""
    (loss * state["scale"]).backward()
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    if not all(bool(torch.isfinite(grad / state["scale"]).all()) for grad in grads):
        state["scale"] *= 0.5
        state["good_steps"] = 0
        return False
    optimizer.step()
    state["good_steps"] += 1
    if state["good_steps"] == state["growth_interval"]:
        state["scale"] *= 2.0
        state["good_steps"] = 0
    return True
