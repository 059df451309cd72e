def scaled_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, state: dict) -> bool:
    """Scaled backward, unscale in place, skip+halve on inf/NaN, else step (+ grow); returns whether it stepped."""
    # unscale group by group, looking for an inf or a NaN separately; the growth decided before counting
    scale = state["scale"]
    loss.mul(scale).backward()
    overflow = False
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            p.grad.div_(scale)
            if torch.isinf(p.grad).any() or torch.isnan(p.grad).any():
                overflow = True
    if overflow:
        state["scale"], state["good_steps"] = scale / 2, 0
        return False
    optimizer.step()
    if state["good_steps"] + 1 == state["growth_interval"]:
        state["scale"], state["good_steps"] = scale * 2, 0
    else:
        state["good_steps"] = state["good_steps"] + 1
    return True
