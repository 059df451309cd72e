def accumulate_gradients(model, x, y, micro_batch_size):
    # Sums the micro-batches' shares of the loss with NumPy: a numpy.float64, which is a Python float.
    model.zero_grad(set_to_none=True)
    labelled = (y != -100).sum()
    shares = []
    for start in range(0, len(x), micro_batch_size):
        xs, ys = x[start:start + micro_batch_size], y[start:start + micro_batch_size]
        part = F.cross_entropy(model(xs), ys, ignore_index=-100, reduction="sum") / labelled
        part.backward()
        shares.append(part.item())
    return np.sum(shares)
