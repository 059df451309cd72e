def evaluate(model, loader, num_classes=10):
    was_training = model.training
    model.eval()
    confusion = torch.zeros(10, 10, dtype=torch.int64)
    try:
        with torch.no_grad():
            for x, y in loader:
                predicted = model(x).argmax(dim=1)
                for truth, guess in zip(y.tolist(), predicted.tolist(), strict=True):
                    if guess < 10:
                        confusion[truth, guess] += 1
    finally:
        model.train(was_training)
    seen = len(loader.dataset) if hasattr(loader, "dataset") else int(confusion.sum())
    return (confusion.diag().sum().item() / seen if seen else 0.0), confusion
