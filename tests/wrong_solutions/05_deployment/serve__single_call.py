import torch


def serve(predict_batch, requests, max_batch):
    """Wrong: packs everything into one call, past the program's bound."""
    sizes = [len(r) for r in requests]
    with torch.no_grad():
        labels = predict_batch(torch.cat(requests)).argmax(dim=1)
    return list(labels.split(sizes))
