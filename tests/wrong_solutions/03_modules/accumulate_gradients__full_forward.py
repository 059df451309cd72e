# Wrong: runs the model once on the whole batch and only splits the loss, so no memory is saved.
def accumulate_gradients(model, x, y, micro_batch_size):
    model.zero_grad(set_to_none=True)
    logits = model(x)
    labelled = int((y != -100).sum())
    total = 0.0
    for ls, ys in zip(logits.split(micro_batch_size), y.split(micro_batch_size)):
        part = F.cross_entropy(ls, ys, ignore_index=-100, reduction="sum") / labelled
        part.backward(retain_graph=True)
        total += part.item()
    return total
