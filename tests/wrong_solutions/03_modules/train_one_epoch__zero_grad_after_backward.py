def train_one_epoch(model, loader, loss_fn, optimizer):
    """Wrong: zero_grad between backward and step: every step uses zero gradients."""
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
        total += loss.item() * len(x)
        count += len(x)
    return total / count
