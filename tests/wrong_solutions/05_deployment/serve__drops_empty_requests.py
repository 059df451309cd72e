def serve(predict_batch, requests: list[torch.Tensor], max_batch: int) -> list[torch.Tensor]:
    """Wrong: leaves empty requests out of the answer (and returns [] when all are empty)."""
    kept = [r for r in requests if r.shape[0] > 0]
    if not kept:
        return []
    images = torch.cat(kept)
    with torch.no_grad():
        labels = torch.cat([predict_batch(chunk).argmax(dim=1) for chunk in images.split(max_batch)])
    return list(labels.split([r.shape[0] for r in kept]))
