# Wrong: the confusion matrix is torch.zeros' default float32, not int64.
def evaluate(model, loader, num_classes=10):
    was_training = model.training
    model.eval()
    confusion = torch.zeros(num_classes, num_classes)
    with torch.no_grad():
        for x, y in loader:
            predicted = model(x).argmax(dim=1)
            for t, p in zip(y.tolist(), predicted.tolist()):
                confusion[t, p] += 1
    model.train(was_training)
    seen = int(confusion.sum())
    return (float(confusion.diag().sum()) / seen if seen else 0.0), confusion
