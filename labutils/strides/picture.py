"""The picture of :mod:`labutils.strides`: render a plan with matplotlib, and ``show``/``compare``.

The last step of facts -> plan -> picture: :mod:`~labutils.strides.layout` gives the facts of a
tensor, :mod:`~labutils.strides.plan` and :mod:`~labutils.strides.diagrams` place every box, label
and line as data, and this module draws that data and wraps it in a :class:`StrideDiagram`.
Figures are built without pyplot and dropped after rendering, so long notebooks do not
accumulate open figures.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from matplotlib.collections import LineCollection, PatchCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from labutils.strides.diagrams import plan_compare, plan_show
from labutils.strides.layout import Layout, explain_layout, layout
from labutils.strides.plan import DrawnCell, Plan

__all__ = ["StrideDiagram", "compare", "render", "show"]

BASE_SCALE = 0.38  # inches per storage cell
MAX_WIDTH_IN = 16.0
DPI = 90


def _text_width(s: str, size: float) -> float:
    """Approximate width of a text in cell units at the base scale."""
    return len(s) * size * 0.55 / 72 / BASE_SCALE


def render(plan: Plan) -> Figure:
    """Draw a :class:`~labutils.strides.plan.Plan` on a new matplotlib Figure (not registered with pyplot)."""
    width = max([plan.width] + [t.x + _text_width(t.s, t.size) for t in plan.texts if t.ha == "left"])
    scale = min(BASE_SCALE, MAX_WIDTH_IN / (width + 1))
    shrink = scale / BASE_SCALE
    fig = Figure(figsize=((width + 1) * scale, (plan.height + 1) * scale), dpi=DPI)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(-0.5, width + 0.5)
    ax.set_ylim(plan.height + 0.5, -0.5)
    ax.axis("off")
    if plan.lines:
        ax.add_collection(
            LineCollection(
                [[(ln.x0, ln.y0), (ln.x1, ln.y1)] for ln in plan.lines],
                colors=[to_rgba(ln.color, ln.alpha) for ln in plan.lines],
                linewidths=0.8,
                zorder=0.5,
            )
        )
    if plan.boxes:  # one collection, not one artist per box: ~10x faster for big diagrams
        ax.add_collection(
            PatchCollection(
                [Rectangle((b.x, b.y), b.w, b.h) for b in plan.boxes],
                match_original=False,
                facecolors=[b.face for b in plan.boxes],
                edgecolors=["none" if b.edge == "none" else b.edge for b in plan.boxes],
                linewidths=[0.0 if b.edge == "none" else 0.6 for b in plan.boxes],
                zorder=1,
            )
        )
    for box in plan.boxes:
        if box.label:
            ax.text(
                box.x + box.w / 2,
                box.y + box.h / 2,
                box.label,
                ha="center",
                va="center",
                fontsize=box.size * shrink,
                color=box.label_color,
            )
    for text in plan.texts:
        ax.text(
            text.x,
            text.y,
            text.s,
            ha=text.ha,
            va=text.va,
            fontsize=text.size * shrink,
            color=text.color,
            fontweight="bold" if text.bold else "normal",
        )
    return fig


def _save(plan: Plan, target: str | Path | io.BytesIO, **kwargs: Any) -> None:
    fig = render(plan)
    fig.savefig(target, **kwargs)
    fig.clear()


class StrideDiagram:
    """A rendered-on-demand stride diagram: inline PNG in Jupyter, ``savefig``, and the drawn data."""

    def __init__(self, plan: Plan, layouts: list[Layout], names: list[str], text: str) -> None:
        self.plan = plan
        self.layouts = layouts
        self.names = names
        self.text = text
        self._png: bytes | None = None

    @property
    def cells(self) -> list[DrawnCell]:
        """Every logical element drawn: tensor name, index, and the storage index shown for it."""
        return self.plan.cells

    def mapping(self, name: str | None = None) -> dict[tuple[int, ...], int]:
        """Drawn ``{logical index: storage index}`` of one tensor (the first one by default)."""
        name = self.names[0] if name is None else name
        return {c.index: c.storage_index for c in self.plan.cells if c.tensor == name}

    def to_figure(self) -> Figure:
        """A new matplotlib Figure of this diagram (yours to keep; not tracked by pyplot)."""
        return render(self.plan)

    def savefig(self, path: str | Path, **kwargs: Any) -> Path:
        """Save the diagram (format from the suffix: .png, .svg, .pdf); returns the path."""
        _save(self.plan, path, **kwargs)
        return Path(path)

    def _repr_png_(self) -> bytes:
        if self._png is None:
            buffer = io.BytesIO()
            _save(self.plan, buffer, format="png")
            self._png = buffer.getvalue()
        return self._png

    def __repr__(self) -> str:
        return self.text


def show(t: torch.Tensor, name: str = "t") -> StrideDiagram:
    """Diagram of one tensor: its storage as a strip of cells above its logical grid.

    Each logical cell is labelled with (and coloured like) the storage cell it reads; lines link
    them for small tensors. Titles give shape, stride, offset, dtype and contiguity; ``xN`` above a
    storage cell says N elements read it (stride 0, overlapping ``as_strided``). 3-d and 4-d
    tensors are drawn as a grid of 2-d slices; big dims and storages are elided with markers.
    """
    lay = layout(t)
    return StrideDiagram(plan_show(lay, name), [lay], [name], explain_layout(lay, name))


def compare(base: torch.Tensor, *views: torch.Tensor, names: Sequence[str] | None = None) -> StrideDiagram:
    """Diagram of several tensors over their storages, colour-coded by which cells each reads.

    Tensors sharing ``base``'s storage are striped onto one strip; a tensor with storage of its
    own (a copy: ``.contiguous()`` of a non-contiguous view, a ``reshape`` that had to copy,
    ``clone``) gets its own strip, labelled as a copy.
    """
    tensors = [base, *views]
    if names is None:
        names = ["base", *(f"view {k}" for k in range(1, len(tensors)))]
    if len(names) != len(tensors):
        raise ValueError(f"got {len(tensors)} tensors but {len(names)} names")
    layouts = [layout(t) for t in tensors]
    text = "\n\n".join(
        _sharing(lay, layouts[0], name, names[0]) + "\n" + explain_layout(lay, name)
        for lay, name in zip(layouts, names, strict=True)
    )
    return StrideDiagram(plan_compare(layouts, list(names)), layouts, list(names), text)


def _sharing(lay: Layout, base: Layout, name: str, base_name: str) -> str:
    if lay is base:
        return f"[{name}: the base]"
    if lay.same_storage(base):
        return f"[{name}: shares {base_name}'s storage (a view)]"
    return f"[{name}: its own storage (a copy of the data, not a view of {base_name})]"
