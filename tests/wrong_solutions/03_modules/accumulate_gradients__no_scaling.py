def accumulate_gradients(model, loss_fn, x, y, micro_batches):
    """Wrong: forgets to divide each micro-batch loss by the number of micro-batches."""
    model.zero_grad(set_to_none=True)
    for xs, ys in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        loss_fn(model(xs), ys).backward()
