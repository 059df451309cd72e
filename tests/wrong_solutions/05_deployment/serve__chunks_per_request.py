import torch


def serve(predict_batch, requests, max_batch):
    """Wrong: splits each request on its own: right labels, but requests are never packed together."""
    answers = []
    with torch.no_grad():
        for r in requests:
            parts = [predict_batch(chunk).argmax(dim=1) for chunk in r.split(max_batch)]
            answers.append(torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64))
    return answers
