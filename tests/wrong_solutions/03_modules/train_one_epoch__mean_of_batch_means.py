def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    """Wrong: averages batch losses, so a smaller last batch counts as much as a full one."""
    model.train()
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)
