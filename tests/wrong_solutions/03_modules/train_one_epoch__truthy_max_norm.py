# Wrong: `if max_norm:` skips clipping when max_norm is 0.0 (the total norm must then be 0).
def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    """Train ``model`` for one epoch over ``loader`` (clipping the total gradient norm to ``max_norm``); return the per-sample mean loss."""
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        if max_norm:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        total += loss.item() * len(x)
        count += len(x)
    return total / count
