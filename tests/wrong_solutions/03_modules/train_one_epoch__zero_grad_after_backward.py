def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    """Wrong: zero_grad between backward and step: every step uses zero gradients."""
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.zero_grad()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        total += loss.item() * len(x)
        count += len(x)
    return total / count
