def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    """Wrong: clears gradients only after each step, so stale gradients leak into the first step."""
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        optimizer.zero_grad()
        total += loss.item() * len(x)
        count += len(x)
    return total / count
