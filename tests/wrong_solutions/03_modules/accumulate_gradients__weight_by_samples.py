def accumulate_gradients(model, x, y, micro_batch_size):
    """Wrong: weights each micro-batch by its share of samples, not of labelled samples (and NaN on an unlabelled one)."""
    model.zero_grad(set_to_none=True)
    total = 0.0
    for xs, ys in zip(x.split(micro_batch_size), y.split(micro_batch_size)):
        loss = F.cross_entropy(model(xs), ys, ignore_index=-100) * len(xs) / len(x)
        loss.backward()
        total += loss.item()
    return total
