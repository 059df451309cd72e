def accumulate_gradients(model, loss_fn, x, y, micro_batches):
    """Wrong: does not clear .grad first, so earlier gradients are added in."""
    for xs, ys in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        (loss_fn(model(xs), ys) / micro_batches).backward()
