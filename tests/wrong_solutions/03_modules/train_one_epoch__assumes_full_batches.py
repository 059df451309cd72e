# Wrong: divides by number_of_batches * first batch size, as if every batch were full.
def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    model.train()
    total, batches, size = 0.0, 0, None
    for x, y in loader:
        size = len(x) if size is None else size
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        total += loss.item() * len(x)
        batches += 1
    return total / (batches * size)
