def serve(predict_batch, requests: list[torch.Tensor], max_batch: int) -> list[torch.Tensor]:
    """Labels for each request, in ``ceil(total / max_batch)`` calls of ``predict_batch``."""
    # Returns what torch.split gives: a tuple of tensors, one per request, in request order.
    sizes = [r.shape[0] for r in requests]
    images = torch.cat(requests)
    with torch.no_grad():
        chunks = [predict_batch(chunk).argmax(dim=1) for chunk in images.split(max_batch)] if len(images) else []
    labels = torch.cat(chunks) if chunks else torch.zeros(0, dtype=torch.int64)
    return torch.split(labels, sizes)
