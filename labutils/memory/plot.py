"""Draw memory timelines with matplotlib: one step, or several steps side by side.

Draws :class:`~labutils.memory.records.TimelineData` (what every ``MemoryTimeline`` is), so it
sits below :mod:`labutils.memory.timeline`, whose ``MemoryTimeline.plot()`` calls it.

Figures are built with ``matplotlib.figure.Figure`` (not pyplot), wrapped in a :class:`MemoryPlot`
that Jupyter displays inline (PNG) exactly once and that saves to any format matplotlib knows.
No JavaScript, works offline.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from labutils.memory.records import CATEGORIES, TimelineData

COLORS = {
    "parameters": "#4C72B0",
    "gradients": "#DD8452",
    "optimizer state": "#55A868",
    "activations": "#C44E52",
    "other": "#9A9A9A",
}
PHASE_SHADES = ("#ececec", "#ffffff")


class MemoryPlot:
    """A matplotlib figure that displays inline in Jupyter and can be saved (``.save(path)``)."""

    def __init__(self, figure: Figure) -> None:
        self.figure = figure

    def save(self, path: str | Path, **kwargs: Any) -> Path:
        """Write the figure (format from the suffix: .png, .svg, .pdf); returns the path."""
        path = Path(path)
        self.figure.savefig(path, bbox_inches="tight", **kwargs)
        return path

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        return buffer.getvalue()


def _unit(peak_bytes: int) -> tuple[str, float]:
    """A readable unit for a byte count: (name, divisor)."""
    for name, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if peak_bytes >= size:
            return name, float(size)
    return "B", 1.0


def draw_timeline(
    ax: Axes, timeline: TimelineData, unit: tuple[str, float], title: str = "", ymax: int | None = None
) -> None:
    """Draw one timeline on ``ax``: stacked categories, phase bands, the peak, CUDA allocated.

    ``ymax`` (bytes) fixes the top of the y axis, so that several timelines share one scale.
    """
    name, size = unit
    x = [s.index for s in timeline.samples]
    x.append(x[-1] + 1)  # step plots need the right edge of the last sample
    ys = [[b / size for b in timeline.series(c)] for c in CATEGORIES]
    ys = [y + y[-1:] for y in ys]
    _draw_phases(ax, timeline, n=len(x) - 1)
    ax.stackplot(
        x,
        *ys,
        labels=list(CATEGORIES),
        colors=[COLORS[c] for c in CATEGORIES],
        step="post",
        alpha=0.9,
        zorder=2,
    )
    if timeline.samples[0].cuda_allocated is not None:
        allocated = [(s.cuda_allocated or 0) / size for s in timeline.samples]
        ax.step(
            x,
            allocated + allocated[-1:],
            where="post",
            color="black",
            linewidth=1,
            label="cuda.memory_allocated",
            zorder=3,
        )
    peak = timeline.peak_sample()
    ax.plot([peak.index + 0.5], [peak.total / size], marker="v", color="black", zorder=4)
    where = peak.index / max(len(x) - 1, 1)
    ax.annotate(
        f"peak {peak.total / size:.2f} {name}\n{peak.phase}: {peak.op}",
        xy=(peak.index + 0.5, peak.total / size),
        xytext=(0, 6),
        textcoords="offset points",
        ha="right" if where > 0.75 else "left" if where < 0.25 else "center",
        va="bottom",
        fontsize=8,
        zorder=4,
    )
    ax.set_xlim(0, x[-1])
    ax.set_ylim(0, (ymax or _ymax(timeline)) / size * 1.22)
    ax.set_xlabel("op (sample index)")
    ax.set_ylabel(f"live tensor memory ({name})")
    ax.set_title(title or timeline.label or f"one training step on {timeline.device}", pad=14)


def _draw_phases(ax: Axes, timeline: TimelineData, n: int) -> None:
    """Shade each phase; name it above the axes, or vertically inside when the band is narrow."""
    for i, (phase, first, last) in enumerate(timeline.phases):
        if phase in ("start", "end"):
            continue
        ax.axvspan(first, last + 1, color=PHASE_SHADES[i % 2], zorder=0)
        middle = (first + last + 1) / 2
        if (last + 1 - first) / n >= 0.08:
            ax.text(
                middle,
                1.0,
                phase,
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=8,
                clip_on=False,
            )
        else:
            ax.text(
                middle,
                0.98,
                phase,
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="top",
                rotation=90,
                fontsize=7,
                zorder=5,
            )


def plot_timeline(timeline: TimelineData, title: str | None = None) -> MemoryPlot:
    """Stacked area of bytes by category over one step."""
    figure = Figure(figsize=(10, 4.2), layout="constrained")
    ax = figure.add_subplot()
    draw_timeline(ax, timeline, _unit(_ymax(timeline)), title or "")
    ax.legend(loc="upper left", fontsize=8)
    return MemoryPlot(figure)


def _ymax(timeline: TimelineData) -> int:
    peak = timeline.peak()
    allocated = [s.cuda_allocated for s in timeline.samples if s.cuda_allocated is not None]
    return max([peak, *allocated])


def plot_comparison(timelines: Mapping[str, TimelineData]) -> MemoryPlot:
    """Several steps side by side on one scale, and a bar per step: what the peak is made of."""
    labels = list(timelines)
    ymax = max(_ymax(t) for t in timelines.values())
    unit = _unit(ymax)
    name, size = unit
    figure = Figure(figsize=(4.2 * len(labels) + 3.5, 4.2), layout="constrained")
    axes = figure.subplots(
        1, len(labels) + 1, sharey=True, gridspec_kw={"width_ratios": [3] * len(labels) + [1.4]}
    )
    for ax, label in zip(axes, labels, strict=False):
        draw_timeline(ax, timelines[label], unit, title=label, ymax=ymax)
    bars = axes[-1]
    bottoms = [0.0] * len(labels)
    for category in CATEGORIES:
        heights = [timelines[label].peak_sample().by_category[category] / size for label in labels]
        bars.bar(range(len(labels)), heights, bottom=bottoms, color=COLORS[category], label=category)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for i, total in enumerate(bottoms):
        bars.text(i, total, f"{total:.2f}", ha="center", va="bottom", fontsize=8)
    bars.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    bars.set_title(f"at each peak ({name})", pad=14)
    axes[0].legend(loc="upper left", fontsize=7)
    return MemoryPlot(figure)
