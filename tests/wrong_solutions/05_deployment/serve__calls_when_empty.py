import torch


def serve(predict_batch, requests, max_batch):
    """Wrong: with no image at all it still calls the model once on an empty batch (and gets rejected)."""
    sizes = [len(r) for r in requests]
    images = torch.cat(requests)
    with torch.no_grad():
        chunks = images.split(max_batch) if len(images) else [images]
        labels = torch.cat([predict_batch(c).argmax(dim=1) for c in chunks])
    return list(labels.split(sizes))
