def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    """Wrong: clips each parameter's gradient to max_norm separately, not the total norm of all of them."""
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if max_norm is not None:
            for p in model.parameters():
                torch.nn.utils.clip_grad_norm_(p, max_norm)
        optimizer.step()
        total += loss.item() * len(x)
        count += len(x)
    return total / count
