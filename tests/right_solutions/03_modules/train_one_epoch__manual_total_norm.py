def train_one_epoch(model, loader, loss_fn, optimizer, max_norm=None):
    model.train()
    losses, sizes = [], []
    for x, y in loader:
        for p in model.parameters():
            p.grad = None
        loss = loss_fn(model(x), y)
        loss.backward()
        if max_norm is not None:
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            norm = torch.linalg.vector_norm(torch.cat([g.reshape(-1) for g in grads]))
            scale = max_norm / (norm + 1e-6)
            if scale < 1:
                for g in grads:
                    g.mul_(scale)
        optimizer.step()
        losses.append(float(loss) * x.shape[0])
        sizes.append(x.shape[0])
    return sum(losses) / sum(sizes)
