def evaluate(model, loader, num_classes=10):
    """Wrong: rows are the predictions and columns the truth."""
    was_training = model.training
    model.eval()
    confusion = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    with torch.no_grad():
        for x, y in loader:
            predicted = model(x).argmax(dim=1)
            for t, p in zip(y.tolist(), predicted.tolist()):
                confusion[p, t] += 1
    model.train(was_training)
    seen = int(confusion.sum())
    return (confusion.trace().item() / seen if seen else 0.0), confusion
