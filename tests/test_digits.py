"""labutils.digits: the course's real data set and model."""

import torch

from labutils import digits


def test_splits_are_disjoint_stratified_and_reproducible():
    splits = digits.load(seed=0)
    assert (len(splits.train), len(splits.val), len(splits.test)) == (1257, 270, 270)
    assert splits.train.x.shape[1:] == digits.IMAGE_SHAPE and splits.train.x.dtype == torch.float32
    assert 0.0 <= splits.train.x.min() and splits.train.x.max() <= 1.0
    rows = [{tuple(img.flatten().tolist()) for img in s.x} for s in (splits.train, splits.val, splits.test)]
    assert not (rows[0] & rows[2]) and not (rows[1] & rows[2]), "a test image also sits in train or val"
    for split in (splits.val, splits.test):
        assert torch.bincount(split.y, minlength=10).min() >= 25, "every digit is in every split"
    again = digits.load(seed=0)
    assert torch.equal(again.test.x, splits.test.x) and not torch.equal(
        digits.load(seed=1).test.y, splits.test.y
    )


def test_model_shape_and_untrained_accuracy():
    torch.manual_seed(0)
    model = digits.DigitsCNN()
    assert model(torch.zeros(5, *digits.IMAGE_SHAPE)).shape == (5, 10)
    assert digits.accuracy(model, digits.load().test) < 0.3


def test_trained_model_generalises():
    model, splits = digits.trained(seed=0)
    assert not model.training
    assert digits.accuracy(model, splits.test) >= 0.95
