"""The course's real model: a small CNN on scikit-learn's handwritten digits.

The data set (1,797 grey 8x8 images of the digits 0-9, from UCI) ships inside scikit-learn, so
nothing is downloaded at run time. Chapter 03 trains :class:`DigitsCNN` on it, chapter 04 trains
it again on several ranks, chapter 05 exports, compiles and serves it.

    splits = digits.load(seed=0)          # train / val / test, stratified, float32 in [0, 1]
    model = digits.DigitsCNN()
    digits.accuracy(model, splits.test)   # about 0.1 before training
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.utils.data import TensorDataset

CLASSES = 10
IMAGE_SHAPE = (1, 8, 8)
PIXEL_MAX = 16.0  # the raw images hold integers 0..16


@dataclass(frozen=True)
class Split:
    """Images ``x`` (N, 1, 8, 8) float32 in [0, 1] and labels ``y`` (N,) int64."""

    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)

    def dataset(self) -> TensorDataset:
        """The split as a ``TensorDataset`` of ``(image, label)`` pairs, for a ``DataLoader``."""
        return TensorDataset(self.x, self.y)


@dataclass(frozen=True)
class Splits:
    """The three disjoint splits: fit on ``train``, choose on ``val``, report once on ``test``."""

    train: Split
    val: Split
    test: Split


def load(seed: int = 0, val_fraction: float = 0.15, test_fraction: float = 0.15) -> Splits:
    """The digits as stratified train/validation/test splits (the same for the same ``seed``)."""
    raw = load_digits()
    x = torch.tensor(raw.images, dtype=torch.float32).unsqueeze(1) / PIXEL_MAX
    y = torch.tensor(raw.target, dtype=torch.int64)
    index = torch.arange(len(y)).numpy()
    rest, test = train_test_split(index, test_size=test_fraction, stratify=raw.target, random_state=seed)
    train, val = train_test_split(
        rest, test_size=val_fraction / (1 - test_fraction), stratify=raw.target[rest], random_state=seed
    )
    return Splits(*(Split(x[torch.as_tensor(i)], y[torch.as_tensor(i)]) for i in (train, val, test)))


class DigitsCNN(nn.Module):
    """Two 3x3 convolutions, a 2x2 max-pool and a two-layer classifier: about 38k parameters."""

    def __init__(self, channels: int = 16, hidden: int = 64) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(channels, 2 * channels, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(2 * channels * 4 * 4, hidden),
            nn.ReLU(),
            nn.Linear(hidden, CLASSES),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (N, 10) for images (N, 1, 8, 8)."""
        return self.classifier(self.features(x))


@torch.no_grad()
def predict(model: nn.Module, x: torch.Tensor, batch_size: int = 512) -> torch.Tensor:
    """Predicted labels (N,) of ``model`` in eval mode; the model's train/eval mode is restored."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    try:
        return torch.cat([model(chunk.to(device)).argmax(1).cpu() for chunk in x.split(batch_size)])
    finally:
        model.train(was_training)


def accuracy(model: nn.Module, split: Split) -> float:
    """Fraction of ``split`` that ``model`` labels right (eval mode, no autograd)."""
    return (predict(model, split.x) == split.y).float().mean().item()


def trained(epochs: int = 12, seed: int = 0, device: str = "cpu") -> tuple[DigitsCNN, Splits]:
    """A ``DigitsCNN`` fitted with Adam on the train split (for chapters where training is not the topic).

    Chapter 03 writes this loop itself; chapters 04 and 05 start from its result.
    """
    torch.manual_seed(seed)
    splits = load(seed)
    model = DigitsCNN().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(len(splits.train), generator=generator)
        for batch in order.split(64):
            x, y = splits.train.x[batch].to(device), splits.train.y[batch].to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return model.eval(), splits
