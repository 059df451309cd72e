"""The memory of a training step as data: one sample per aten op, bytes per category.

Built by :class:`~labutils.memory_tracker.MemoryTracker`; drawn by :mod:`labutils.memory_plot`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from labutils.memory_plot import MemoryPlot
    from labutils.memory_tracker import StorageRecord

CATEGORIES: tuple[str, ...] = ("parameters", "gradients", "optimizer state", "activations", "other")
MIB = 2**20


@dataclass(frozen=True)
class MemorySample:
    """Live tensor bytes right after one op (or at ``start``/``end``).

    ``by_category`` maps each of :data:`CATEGORIES` to bytes; ``cuda_allocated`` is
    ``torch.cuda.memory_allocated()`` at that moment (None on CPU).
    """

    index: int
    phase: str
    op: str
    module: str
    by_category: dict[str, int]
    cuda_allocated: int | None = None

    @property
    def total(self) -> int:
        """All tracked bytes alive at this sample."""
        return sum(self.by_category.values())


@dataclass
class MemoryTimeline:
    """Samples of one tracked block of code, with peaks and a plot.

    ``cuda_stats`` holds ``memory_allocated``/``max_memory_allocated``/``memory_reserved`` at the
    end of a CUDA run (None on CPU).
    """

    samples: list[MemorySample]
    device: str = "cpu"
    cuda_stats: dict[str, int] | None = None
    label: str = ""
    phases: list[tuple[str, int, int]] = field(default_factory=list)

    def series(self, category: str) -> list[int]:
        """Bytes of one category at every sample."""
        return [s.by_category[category] for s in self.samples]

    def totals(self) -> list[int]:
        """Tracked bytes at every sample."""
        return [s.total for s in self.samples]

    def peak(self, category: str | None = None) -> int:
        """Peak bytes of one category, or of the total when ``category`` is None."""
        values = self.totals() if category is None else self.series(category)
        return max(values)

    def peaks(self) -> dict[str, int]:
        """Peak bytes of each category (each at its own moment)."""
        return {c: self.peak(c) for c in CATEGORIES}

    def peak_sample(self) -> MemorySample:
        """The sample where the tracked total is highest."""
        return max(self.samples, key=lambda s: s.total)

    def in_phase(self, phase: str) -> list[MemorySample]:
        """The samples taken during one phase."""
        return [s for s in self.samples if s.phase == phase]

    def table(self) -> str:
        """Peaks per category in MiB, as aligned text."""
        lines = [f"{'category':<16}{'peak MiB':>10}"]
        lines += [f"{c:<16}{b / MIB:>10.3f}" for c, b in self.peaks().items()]
        peak = self.peak_sample()
        lines.append(f"{'total':<16}{peak.total / MIB:>10.3f}  at #{peak.index} {peak.phase}/{peak.op}")
        if self.cuda_stats:
            lines += [f"{k:<22}{v / MIB:>10.3f}" for k, v in self.cuda_stats.items()]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-serialisable): samples and peaks."""
        return {
            "device": self.device,
            "label": self.label,
            "cuda_stats": self.cuda_stats,
            "peaks": self.peaks(),
            "samples": [
                {"index": s.index, "phase": s.phase, "op": s.op, "module": s.module,
                 "cuda_allocated": s.cuda_allocated, **s.by_category}
                for s in self.samples
            ],
        }

    def plot(self, title: str | None = None) -> MemoryPlot:
        """Stacked area of bytes by category over the step (displays inline; ``.save(path)``)."""
        from labutils.memory_plot import plot_timeline

        return plot_timeline(self, title=title)

    def __repr__(self) -> str:
        return f"MemoryTimeline({len(self.samples)} samples on {self.device})\n{self.table()}"


def build_timeline(records: Sequence[StorageRecord], steps: Sequence[tuple[str, str, str]],
                   cuda_allocated: Sequence[int], device: str = "cpu",
                   cuda_stats: dict[str, int] | None = None) -> MemoryTimeline:
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
