def evaluate(model, loader, num_classes=10):
    # Returns [accuracy, confusion], a list the caller unpacks like the tuple, and the accuracy as
    # NumPy's mean of per-sample hits: a numpy.float64, which is a Python float.
    was_training = model.training
    model.eval()
    hits, confusion = [], torch.zeros(num_classes, num_classes, dtype=torch.int64)
    with torch.no_grad():
        for x, y in loader:
            predicted = model(x).argmax(dim=1)
            hits.extend((predicted == y).tolist())
            for t, p in zip(y.tolist(), predicted.tolist()):
                confusion[t, p] += 1
    model.train(was_training)
    return [np.mean(hits) if hits else 0.0, confusion]
