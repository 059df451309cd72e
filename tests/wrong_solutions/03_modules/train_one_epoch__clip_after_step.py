def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    """Wrong: clips the gradients after optimizer.step(), when the step has already used them."""
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        total += loss.item() * len(x)
        count += len(x)
    return total / count
