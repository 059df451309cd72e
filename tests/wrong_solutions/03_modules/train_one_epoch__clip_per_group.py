def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    """Wrong: clips each parameter group to max_norm on its own, not the total norm over all of them."""
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if max_norm is not None:
            for group in optimizer.param_groups:
                torch.nn.utils.clip_grad_norm_(group["params"], max_norm)
        optimizer.step()
        total += loss.item() * len(x)
        count += len(x)
    return total / count
