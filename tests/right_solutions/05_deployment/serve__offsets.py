def serve(predict_batch, requests: list[torch.Tensor], max_batch: int) -> list[torch.Tensor]:
    """Labels for each request, in ``ceil(total / max_batch)`` calls of ``predict_batch``."""
    pool = torch.cat(requests) if requests else torch.zeros(0, 1, 8, 8)
    preds = []
    with torch.inference_mode():
        for start in range(0, pool.shape[0], max_batch):
            preds.append(predict_batch(pool[start:start + max_batch]).max(dim=1).indices)
    flat = torch.cat(preds) if preds else torch.zeros(0, dtype=torch.int64)
    out, at = [], 0
    for r in requests:
        out.append(flat[at:at + r.shape[0]].clone())
        at += r.shape[0]
    return out
