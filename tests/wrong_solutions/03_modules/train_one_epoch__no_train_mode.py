def train_one_epoch(model, loader, loss_fn, optimizer):
    """Wrong: forgets model.train(): a model left in eval mode trains without dropout."""
    total, count = 0.0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(x)
        count += len(x)
    return total / count
