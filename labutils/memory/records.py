"""The memory of a training step as plain data: categories, storage records, samples and their peaks.

The bottom of :mod:`labutils.memory`; it imports nothing else of it. The dependency order is
``records -> plot -> timeline -> dispatch -> tracker -> step`` (the face, ``__init__``, on top):
:class:`StorageRecord` is what :mod:`~labutils.memory.tracker` keeps per storage,
:class:`TimelineData` is what :mod:`~labutils.memory.plot` draws, and
:class:`~labutils.memory.timeline.MemoryTimeline` adds ``.plot()`` to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CATEGORIES: tuple[str, ...] = ("parameters", "gradients", "optimizer state", "activations", "other")
MIB = 2**20

# Roles in order of strength: the strongest role a storage ever had is its category.
_RANK = {name: rank for rank, name in enumerate(reversed(CATEGORIES))}


@dataclass(slots=True)
class StorageRecord:
    """One storage seen by the tracker: its size, when it was born and freed (sample indices)."""

    nbytes: int
    born: int
    freed: int | None = None
    category: str = "other"
    pinned: bool = False

    def mark(self, category: str) -> None:
        """Give this storage a role; the strongest role wins (a pinned input stays "other")."""
        if not self.pinned and _RANK[category] > _RANK[self.category]:
            self.category = category


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
class TimelineData:
    """Samples of one tracked block of code, with peaks (the data of a
    :class:`~labutils.memory.timeline.MemoryTimeline`, without its plot).

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
                {
                    "index": s.index,
                    "phase": s.phase,
                    "op": s.op,
                    "module": s.module,
                    "cuda_allocated": s.cuda_allocated,
                    **s.by_category,
                }
                for s in self.samples
            ],
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.samples)} samples on {self.device})\n{self.table()}"
