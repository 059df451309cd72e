def evaluate(model, loader, num_classes=10):
    mode = model.training
    model.eval()
    confusion = torch.zeros((num_classes, num_classes), dtype=torch.long)
    correct, total = 0, 0
    try:
        with torch.inference_mode():
            for x, y in loader:
                pred = model(x).argmax(1)
                confusion.index_put_((y, pred), torch.ones_like(y), accumulate=True)
                correct += (pred == y).sum().item()
                total += y.numel()
    finally:
        model.train(mode)
    return (correct / total if total else 0.0), confusion
