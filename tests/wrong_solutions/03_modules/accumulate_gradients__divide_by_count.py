def accumulate_gradients(model, x, y, micro_batch_size):
    """Wrong: the lesson's rule, each micro-batch's mean loss divided by the number of micro-batches."""
    model.zero_grad(set_to_none=True)
    chunks = list(zip(x.split(micro_batch_size), y.split(micro_batch_size)))
    total = 0.0
    for xs, ys in chunks:
        loss = F.cross_entropy(model(xs), ys, ignore_index=-100) / len(chunks)
        loss.backward()
        total += loss.item()
    return total
