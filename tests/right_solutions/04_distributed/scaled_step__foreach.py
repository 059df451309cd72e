def scaled_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, state: dict) -> bool:
    """Scaled backward, unscale in place, skip+halve on inf/NaN, else step (+ grow); returns whether it stepped."""
    scale = state["scale"]
    loss.mul(scale).backward()
    grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
    torch._foreach_mul_(grads, 1.0 / scale)
    bad = any(not torch.isfinite(g).all() for g in grads)
    if bad:
        state.update(scale=scale / 2, good_steps=0)
        return False
    optimizer.step()
    state["good_steps"] += 1
    if state["good_steps"] >= state["growth_interval"]:
        state.update(scale=scale * 2, good_steps=0)
    return True
