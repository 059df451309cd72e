def accumulate_gradients(model, x, y, micro_batch_size):
    for p in model.parameters():
        p.grad = None
    labelled = (y != -100).sum().item()
    loss = 0.0
    for start in range(0, len(x), micro_batch_size):
        xs, ys = x[start:start + micro_batch_size], y[start:start + micro_batch_size]
        here = (ys != -100).sum().item()
        logits = model(xs)
        if here == 0:
            continue  # nothing labelled: this micro-batch adds nothing (and its mean would be NaN)
        part = F.cross_entropy(logits, ys, ignore_index=-100) * (here / labelled)
        part.backward()
        loss += part.item()
    return loss
