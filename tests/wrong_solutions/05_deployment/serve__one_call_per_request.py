import torch


def serve(predict_batch, requests, max_batch):
    """Wrong: one call per request: too many calls, and a request larger than max_batch is rejected."""
    with torch.no_grad():
        return [predict_batch(r).argmax(dim=1) if len(r) else torch.zeros(0, dtype=torch.int64) for r in requests]
