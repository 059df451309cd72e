"""One training step under a :class:`~labutils.memory.tracker.MemoryTracker`, and steps side by side.

:func:`track_step` runs forward + loss, backward, ``optimizer.step()`` and ``zero_grad`` in four
phases; :func:`checkpointed` is a ``forward`` for it; :func:`compare` draws several timelines on one
scale. The top of the import order (``records -> plot -> timeline -> dispatch -> tracker -> step``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint_sequential

from labutils.memory.plot import MemoryPlot, plot_comparison
from labutils.memory.timeline import MemoryTimeline
from labutils.memory.tracker import MemoryTracker

__all__ = ["Forward", "Loss", "checkpointed", "compare", "track_step"]

Forward = Callable[[nn.Module, torch.Tensor], torch.Tensor]
Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def checkpointed(segments: int) -> Forward:
    """A ``forward`` for :func:`track_step` that checkpoints an ``nn.Sequential`` in ``segments``.

    Uses ``checkpoint_sequential(..., use_reentrant=False)``: only segment inputs are kept,
    the rest is recomputed during backward.
    """

    def forward(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(model, nn.Sequential):
            raise TypeError("checkpointed(segments) needs an nn.Sequential model")
        return checkpoint_sequential(model, segments, x, use_reentrant=False)

    return forward


def _plain_forward(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model(x)


def track_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    loss_fn: Loss = F.cross_entropy,
    *,
    forward: Forward | None = None,
    warmup_steps: int = 0,
    label: str = "",
    cuda_snapshot: str | None = None,
) -> MemoryTimeline:
    """Track one training step: forward + loss, backward, ``optimizer.step()``, ``zero_grad``.

    Args:
        model, optimizer, inputs, targets, loss_fn: the step (``loss_fn(model(inputs), targets)``).
        forward: how to call the model (default ``model(inputs)``; see :func:`checkpointed`).
        warmup_steps: untracked steps first, so optimizer state already exists (steady state).
        label: a title for plots.
        cuda_snapshot: CUDA only: path of an allocator snapshot (``torch.cuda.memory._dump_snapshot``).

    Returns the :class:`MemoryTimeline` with phases ``forward``, ``backward``, ``optimizer``,
    ``zero_grad`` (``set_to_none=True``: the gradients are freed there).
    """
    forward = forward or _plain_forward
    model.train()
    for _ in range(warmup_steps):
        loss_fn(forward(model, inputs), targets).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    tracker = MemoryTracker(model, optimizer, inputs=(inputs, targets), cuda_snapshot=cuda_snapshot)
    with tracker:
        with tracker.phase("forward"):
            loss = loss_fn(forward(model, inputs), targets)
        with tracker.phase("backward"):
            loss.backward()
        with tracker.phase("optimizer"):
            optimizer.step()
        with tracker.phase("zero_grad"):
            optimizer.zero_grad(set_to_none=True)
            del loss
    timeline = tracker.timeline
    timeline.label = label
    return timeline


def compare(timelines: Mapping[str, MemoryTimeline]) -> MemoryPlot:
    """Steps side by side on one scale (e.g. with/without checkpointing, SGD vs Adam)."""
    if not timelines:
        raise ValueError("compare() needs at least one timeline")
    return plot_comparison(timelines)
