def accumulate_gradients(model, x, y, micro_batch_size):
    """Wrong: right scaling, but gradients left in .grad by earlier code are added to."""
    labelled = int((y != -100).sum())
    total = 0.0
    for xs, ys in zip(x.split(micro_batch_size), y.split(micro_batch_size)):
        loss = F.cross_entropy(model(xs), ys, ignore_index=-100, reduction="sum") / labelled
        loss.backward()
        total += loss.item()
    return total
