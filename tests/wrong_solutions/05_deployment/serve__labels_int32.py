def serve(predict_batch, requests: list[torch.Tensor], max_batch: int) -> list[torch.Tensor]:
    """Wrong: int32 labels instead of int64."""
    sizes = [r.shape[0] for r in requests]
    if sum(sizes) == 0:
        return [torch.zeros(0, dtype=torch.int32) for _ in requests]
    images = torch.cat(requests)
    with torch.no_grad():
        labels = torch.cat([predict_batch(chunk).argmax(dim=1) for chunk in images.split(max_batch)])
    return [part.to(torch.int32) for part in labels.split(sizes)]
