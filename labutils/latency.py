"""Latency pictures for chapter 05: speedup bars across runtimes and distributions of repeated timings.

Built like :mod:`labutils.graphs`, in three steps behind two short faces:

- data: :class:`Runtime` rows (name, median ms, optional samples) and :class:`LatencyPlot`, made by
  :func:`from_table` (a :class:`labutils.deploy.LatencyTable`), :func:`from_medians` (a dict) or
  :func:`from_samples` (repeated timings in ms);
- transforms: :func:`speedups` (baseline / row, > 1 is faster) and :func:`summarise` (median, spread,
  tail of a sample);
- renderer: :func:`render` draws a :class:`LatencyPlot` with matplotlib.

The faces: ``bars(table_or_medians)`` (one bar per runtime, speedup written on each bar) and
``distribution(samples_by_name)`` (every timing as a tick, median and p90 marked). Both return a
:class:`Picture`: a notebook shows it as a PNG (no pyplot state involved), a test reads ``.figure``
and ``.plot``.
"""

from __future__ import annotations

import io
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from matplotlib.figure import Figure

BAR_COLORS = ("tab:gray", "tab:orange", "tab:blue", "tab:green", "tab:purple", "tab:red")


@dataclass(frozen=True)
class Runtime:
    """One runtime's latency: its median in ms and, when measured one by one, every sample."""

    name: str
    median_ms: float
    samples_ms: tuple[float, ...] = ()


@dataclass
class LatencyPlot:
    """What :func:`render` draws: rows, the baseline for speedups, a title, and the picture's kind."""

    rows: list[Runtime]
    title: str = "latency"
    baseline: str | None = None
    kind: str = "bars"  # bars | distribution
    notes: list[str] = field(default_factory=list)


def from_medians(
    medians: Mapping[str, float], title: str = "latency", baseline: str | None = None
) -> LatencyPlot:
    """A bar plot's data from ``{runtime name: median ms}`` (first entry is the baseline by default)."""
    rows = [Runtime(name, float(ms)) for name, ms in medians.items()]
    if any(r.median_ms <= 0 for r in rows):
        raise ValueError(f"latencies must be positive: {dict(medians)}")
    return LatencyPlot(rows, title=title, baseline=baseline)


def from_table(table: Any) -> LatencyPlot:
    """A bar plot's data from a :class:`labutils.deploy.LatencyTable` (its rows, title and baseline)."""
    return from_medians({name: ms for name, ms, _ in table.rows}, title=table.title, baseline=table.baseline)


def from_samples(samples: Mapping[str, Sequence[float]], title: str = "repeated timings") -> LatencyPlot:
    """A distribution plot's data from ``{name: [ms, ms, ...]}`` (each list non-empty)."""
    rows = []
    for name, values in samples.items():
        if not values:
            raise ValueError(f"no samples for {name!r}")
        rows.append(Runtime(name, statistics.median(values), tuple(float(v) for v in values)))
    return LatencyPlot(rows, title=title, kind="distribution")


def speedups(plot: LatencyPlot) -> dict[str, float]:
    """``baseline median / row median`` per row (> 1 means faster than the baseline)."""
    if not plot.rows:
        return {}
    by_name = {r.name: r.median_ms for r in plot.rows}
    base = by_name[plot.baseline or plot.rows[0].name]
    return {name: base / ms for name, ms in by_name.items()}


def summarise(samples_ms: Sequence[float]) -> dict[str, float]:
    """Median, min, p90, max and mean of a sample; ``mean > median`` is the sign of a slow tail."""
    ordered = sorted(samples_ms)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {
        "min": ordered[0],
        "median": statistics.median(ordered),
        "p90": p90,
        "max": ordered[-1],
        "mean": statistics.fmean(ordered),
    }


def render(
    plot: LatencyPlot,
    width: float = 6.0,
    unit: str = "median latency (ms), lower is better",
    show_speedup: bool = True,
) -> Figure:
    """Draw ``plot`` (a :class:`LatencyPlot`) and return the figure (log scale when bars span > 20x).

    ``unit`` labels the x axis of bars; ``show_speedup=False`` leaves out the ``Nx`` labels (for
    quantities that are not latencies of one job, such as a profile's time per operator)."""
    fig = Figure(figsize=(width, 0.5 + 0.45 * max(len(plot.rows), 2)))
    ax = fig.add_subplot()
    names = [r.name for r in plot.rows]
    if plot.kind == "bars":
        medians = [r.median_ms for r in plot.rows]
        ax.barh(names, medians, color=[BAR_COLORS[i % len(BAR_COLORS)] for i in range(len(names))])
        factors = speedups(plot)
        if show_speedup:
            for y, row in enumerate(plot.rows):
                ax.annotate(f" {factors[row.name]:.2f}x", (row.median_ms, y), va="center", fontsize=8)
        if medians and max(medians) / min(medians) > 20:
            ax.set_xscale("log")
        speed_note = f"; Nx = speed vs {plot.baseline or names[0]}" if show_speedup else ""
        ax.set_xlabel(unit + speed_note)
    else:
        for y, row in enumerate(plot.rows):
            stats = summarise(row.samples_ms)
            ax.plot(row.samples_ms, [y] * len(row.samples_ms), "|", color="tab:gray", markersize=12)
            ax.plot([stats["median"]], [y], "o", color="tab:orange", label="median" if y == 0 else None)
            ax.plot([stats["p90"]], [y], "v", color="tab:red", label="p90" if y == 0 else None)
        ax.set_yticks(range(len(names)), names)
        ax.set_xlabel("ms per call (every timing is a tick)")
        ax.legend(loc="lower right", fontsize=8)
    ax.invert_yaxis()
    ax.set_title(plot.title, fontsize=9)
    fig.tight_layout()
    return fig


@dataclass
class Picture:
    """A rendered latency plot: ``plot`` (the data), ``figure`` (matplotlib); shown as PNG in notebooks."""

    plot: LatencyPlot
    figure: Figure

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()

    def __repr__(self) -> str:
        rows = ", ".join(f"{r.name}={r.median_ms:.3g} ms" for r in self.plot.rows)
        return f"<latency {self.plot.kind}: {self.plot.title}: {rows}>"


def bars(
    data: Any,
    title: str = "latency",
    baseline: str | None = None,
    unit: str = "median latency (ms), lower is better",
    show_speedup: bool = True,
) -> Picture:
    """Speedup bars from a ``LatencyTable`` or a ``{name: median ms}`` dict (see :func:`render`)."""
    plot = (
        from_medians(data, title=title, baseline=baseline) if isinstance(data, Mapping) else from_table(data)
    )
    return Picture(plot, render(plot, unit=unit, show_speedup=show_speedup))


def distribution(samples: Mapping[str, Sequence[float]], title: str = "repeated timings") -> Picture:
    """Every timing of each runtime as a tick, with its median and p90."""
    plot = from_samples(samples, title=title)
    return Picture(plot, render(plot))
