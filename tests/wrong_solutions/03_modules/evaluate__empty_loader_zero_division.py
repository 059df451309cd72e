# Wrong: divides by the number of samples seen, which is 0 for a loader with no batch.
def evaluate(model, loader, num_classes=10):
    was_training = model.training
    model.eval()
    confusion = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    correct = seen = 0
    with torch.no_grad():
        for x, y in loader:
            predicted = model(x).argmax(dim=1)
            for t, p in zip(y.tolist(), predicted.tolist()):
                confusion[t, p] += 1
            correct += int((predicted == y).sum())
            seen += len(y)
    model.train(was_training)
    return correct / seen, confusion
