def train_one_epoch(model, loader, loss_fn, optimizer):
    """Wrong: clears gradients only after each step, so stale gradients leak into the first step."""
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total += loss.item() * len(x)
        count += len(x)
    return total / count
