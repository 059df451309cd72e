def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    model.train()
    losses, sizes = [], []
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        if max_norm is not None:
            nn.utils.clip_grad_norm_(list(model.parameters()), max_norm=max_norm)
        optimizer.step()
        losses.append(loss.detach() * targets.shape[0])
        sizes.append(targets.shape[0])
    return float(torch.stack(losses).sum() / sum(sizes))
