"""Timing that respects CUDA asynchrony: torch.utils.benchmark underneath."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils import benchmark


def measure(
    fn: Callable[..., Any],
    *args: Any,
    min_run_time: float = 0.2,
    label: str = "",
    num_threads: int | None = None,
) -> benchmark.Measurement:
    """Time ``fn(*args)`` with warm-up and CUDA synchronisation (``torch.utils.benchmark.Timer``).

    Returns the ``Measurement``; ``.median`` is in seconds.
    """
    timer = benchmark.Timer(
        stmt="fn(*args)",
        globals={"fn": fn, "args": args},
        label=label or getattr(fn, "__name__", "fn"),
        num_threads=num_threads or torch.get_num_threads(),
    )
    return timer.blocked_autorange(min_run_time=min_run_time)


def median_ms(fn: Callable[..., Any], *args: Any, min_run_time: float = 0.2) -> float:
    """Median wall time of ``fn(*args)`` in milliseconds (see :func:`measure`)."""
    return measure(fn, *args, min_run_time=min_run_time).median * 1e3
