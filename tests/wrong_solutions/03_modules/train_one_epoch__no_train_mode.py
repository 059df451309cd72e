def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    """Wrong: forgets model.train(): a model left in eval mode trains without dropout."""
    total, count = 0.0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        total += loss.item() * len(x)
        count += len(x)
    return total / count
