# Wrong: cuts the batch into ceil(n / micro_batch_size) equal chunks (x.chunk): each is at most
# micro_batch_size, but not the consecutive micro-batches of exactly micro_batch_size the prompt asks for.
def accumulate_gradients(model, x, y, micro_batch_size):
    model.zero_grad(set_to_none=True)
    labelled = int((y != -100).sum())
    pieces = math.ceil(len(x) / micro_batch_size)
    total = 0.0
    for xs, ys in zip(x.chunk(pieces), y.chunk(pieces)):  # each at most micro_batch_size samples
        part = F.cross_entropy(model(xs), ys, ignore_index=-100, reduction="sum") / labelled
        part.backward()
        total += part.item()
    return total
