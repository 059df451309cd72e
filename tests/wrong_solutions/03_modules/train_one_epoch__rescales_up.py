# Wrong: hand-written clipping that always rescales to max_norm, so small gradients are scaled up.
def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if max_norm is not None:
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
            for g in grads:
                g.mul_(max_norm / (norm + 1e-6))
        optimizer.step()
        total += loss.item() * len(x)
        count += len(x)
    return total / count
