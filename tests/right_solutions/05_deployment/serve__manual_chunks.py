def serve(predict_batch, requests: list[torch.Tensor], max_batch: int) -> list[torch.Tensor]:
    counts = [int(r.shape[0]) for r in requests]
    total = sum(counts)
    labels = torch.empty(total, dtype=torch.int64)
    if total:
        images = torch.cat([r for r in requests if r.shape[0]])
        with torch.no_grad():
            for start in range(0, total, max_batch):
                labels[start:start + max_batch] = predict_batch(images[start:start + max_batch]).argmax(dim=-1)
    out, at = [], 0
    for n in counts:
        out.append(labels[at:at + n].clone())
        at += n
    return out
