def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    # The per-sample mean as NumPy's weighted average: a numpy.float64, which is a Python float
    # (isinstance(loss, float) holds, as the lab's test checks).
    model.train()
    losses, sizes = [], []
    for x, y in loader:
        optimizer.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        losses.append(loss.item())
        sizes.append(len(x))
    return np.average(losses, weights=sizes)
