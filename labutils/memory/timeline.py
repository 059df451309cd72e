"""The memory of a training step as a :class:`MemoryTimeline`: one sample per aten op, bytes per category.

Built by :class:`~labutils.memory.tracker.MemoryTracker` (through :func:`build_timeline`); its data
and peaks are :class:`~labutils.memory.records.TimelineData`, drawn by :mod:`labutils.memory.plot`.
"""

from __future__ import annotations

from collections.abc import Sequence

from labutils.memory.plot import MemoryPlot, plot_timeline
from labutils.memory.records import CATEGORIES, MemorySample, StorageRecord, TimelineData


class MemoryTimeline(TimelineData):
    """Samples of one tracked block of code, with peaks and a plot.

    ``cuda_stats`` holds ``memory_allocated``/``max_memory_allocated``/``memory_reserved`` at the
    end of a CUDA run (None on CPU).
    """

    def plot(self, title: str | None = None) -> MemoryPlot:
        """Stacked area of bytes by category over the step (displays inline; ``.save(path)``)."""
        return plot_timeline(self, title=title)


def build_timeline(
    records: Sequence[StorageRecord],
    steps: Sequence[tuple[str, str, str]],
    cuda_allocated: Sequence[int],
    device: str = "cpu",
    cuda_stats: dict[str, int] | None = None,
) -> MemoryTimeline:
    """Turn storage lifetimes (born/freed sample indices) into per-sample bytes by category."""
    n = len(steps)
    deltas = {c: [0] * (n + 1) for c in CATEGORIES}
    for record in records:
        delta = deltas[record.category]
        delta[min(record.born, n)] += record.nbytes
        if record.freed is not None:
            delta[min(record.freed, n)] -= record.nbytes
    running = dict.fromkeys(CATEGORIES, 0)
    samples = []
    for i, (phase, op, module) in enumerate(steps):
        for c in CATEGORIES:
            running[c] += deltas[c][i]
        alloc = cuda_allocated[i] if i < len(cuda_allocated) else None
        samples.append(MemorySample(i, phase, op, module, dict(running), alloc))
    return MemoryTimeline(samples=samples, device=device, cuda_stats=cuda_stats, phases=_phase_spans(steps))


def _phase_spans(steps: Sequence[tuple[str, str, str]]) -> list[tuple[str, int, int]]:
    """Consecutive runs of one phase as (name, first index, last index)."""
    spans: list[tuple[str, int, int]] = []
    for i, (phase, _, _) in enumerate(steps):
        if spans and spans[-1][0] == phase:
            spans[-1] = (phase, spans[-1][1], i)
        else:
            spans.append((phase, i, i))
    return spans
