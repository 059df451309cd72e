def accumulate_gradients(model, loss_fn, x, y, micro_batches):
    """Wrong: micro-batch calls for show, then the gradient of one full-batch model.forward(x)."""
    model.zero_grad(set_to_none=True)
    with torch.no_grad():
        for xs in x.chunk(micro_batches):
            model(xs)
    loss_fn(model.forward(x), y).backward()
