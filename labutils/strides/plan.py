"""Where every box, label and line of a stride diagram goes, computed as plain data.

A :class:`Plan` holds boxes, texts and lines in "cell units" (one storage cell is a 1x1 box,
y grows downwards) plus the list of drawn logical cells with the storage index each shows.
:mod:`labutils.strides.picture` renders a plan with matplotlib; tests inspect the plan directly.
Large tensors are elided: at most ``MAX_DIM`` rows/columns per 2-d slice, a few slices
per leading dimension, and only the storage cells that drawn elements read.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from labutils.strides.layout import Layout

MAX_DIM = 12  # a dim up to this size is drawn whole; longer ones as 4 + marker + 3
MAX_DIM_IN_SLICES = 8  # in a grid of 2-d slices (3-d and up): longer dims as 3 + marker + 2
MAX_LEAD = 4  # leading (slice) dims up to this size drawn whole; longer as 2 + marker + 1
MAX_STORAGE = 128  # a storage up to this many cells is drawn whole
STORAGE_KEEP = 64  # otherwise at most this many read cells, the rest elided


@dataclass(frozen=True)
class Box:
    """A rectangle with its top-left corner at (x, y), optionally labelled in its centre."""

    x: float
    y: float
    w: float
    h: float
    face: str
    edge: str = "#555555"
    label: str = ""
    label_color: str = "black"
    size: float = 8.0


@dataclass(frozen=True)
class Text:
    """A text anchored at (x, y)."""

    x: float
    y: float
    s: str
    size: float = 9.0
    color: str = "black"
    ha: str = "center"
    va: str = "center"
    bold: bool = False


@dataclass(frozen=True)
class Line:
    """A straight line (the mapping from a logical cell to its storage cell)."""

    x0: float
    y0: float
    x1: float
    y1: float
    color: str
    alpha: float = 0.5


@dataclass(frozen=True)
class DrawnCell:
    """One logical element as drawn: which tensor, its index, and the storage index it shows."""

    tensor: str
    index: tuple[int, ...]
    storage_index: int


@dataclass
class Plan:
    """Everything a diagram draws; ``width``/``height`` are the extent in cell units."""

    boxes: list[Box] = field(default_factory=list)
    texts: list[Text] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    cells: list[DrawnCell] = field(default_factory=list)
    storage_slots: list[list[int | None]] = field(default_factory=list)
    width: float = 1.0
    height: float = 1.0


def elide(n: int, limit: int, head: int, tail: int) -> list[int | None]:
    """Indices 0..n-1, or ``head`` first + ``None`` (an elision marker) + ``tail`` last when n > limit."""
    if n <= limit:
        return list(range(n))
    return [*range(head), None, *range(n - tail, n)]


@dataclass(frozen=True)
class Placed:
    """A logical cell placed on the canvas (top-left corner) with its storage index."""

    index: tuple[int, ...]
    storage_index: int
    x: float
    y: float


@dataclass
class Grid:
    """A tensor's logical view laid out as 2-d slices, relative to (0, 0)."""

    cells: list[Placed]
    texts: list[Text]
    width: float
    height: float


def layout_grid(lay: Layout, name: str) -> Grid:
    """Lay out the logical elements of ``lay``: 0-d..2-d as one grid, higher dims as a grid of 2-d slices."""
    shape = lay.shape
    rows, cols = (shape[-2], shape[-1]) if len(shape) >= 2 else (1, shape[0] if shape else 1)
    lead = shape[:-2]
    row_lead, col_lead = (lead[:-1], lead[-1]) if lead else ((), 1)
    limit, head, tail = (MAX_DIM, 4, 3) if not lead else (MAX_DIM_IN_SLICES, 3, 2)
    row_slots = elide(rows, limit, head, tail)
    col_slots = elide(cols, limit, head, tail)
    slice_rows = elide(math.prod(row_lead), MAX_LEAD, 2, 1)
    slice_cols = elide(col_lead, MAX_LEAD, 2, 1)
    label_h = 0.9 if lead else 0.0
    block_w, block_h = max(len(col_slots), 1), max(len(row_slots), 1)
    cells: list[Placed] = []
    texts: list[Text] = []
    for bi, flat in enumerate(slice_rows):
        for bj, cj in enumerate(slice_cols):
            bx, by = bj * (block_w + 1), bi * (block_h + label_h + 0.6) + label_h
            if flat is None or cj is None:
                mark = "⋮" if flat is None else "⋯"
                texts.append(Text(bx + block_w / 2, by + block_h / 2, mark, size=14))
                continue
            prefix = (*_unravel(flat, row_lead), cj) if lead else ()
            if lead:
                label = f"{name}[{', '.join(str(i) for i in prefix)}]"
                texts.append(Text(bx + block_w / 2, by - label_h / 2, label, size=8, color="#333333"))
            _place_slice(lay, prefix, row_slots, col_slots, bx, by, cells, texts)
    width = len(slice_cols) * (block_w + 1) - 1
    height = len(slice_rows) * (block_h + label_h + 0.6) - 0.6
    if lay.numel == 0:
        texts.append(Text(width / 2, height / 2, "(empty)", size=9, color="#777777"))
    return Grid(cells, texts, max(width, 1.0), max(height, 1.0))


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return tuple(reversed(index))


def _place_slice(
    lay: Layout,
    prefix: tuple[int, ...],
    row_slots: list[int | None],
    col_slots: list[int | None],
    bx: float,
    by: float,
    cells: list[Placed],
    texts: list[Text],
) -> None:
    ndim = len(lay.shape)
    for r, c in itertools.product(range(len(row_slots)), range(len(col_slots))):
        ri, ci = row_slots[r], col_slots[c]
        x, y = bx + c, by + r
        if ri is None or ci is None:
            mark = "⋱" if ri is None and ci is None else ("⋮" if ri is None else "⋯")
            texts.append(Text(x + 0.5, y + 0.5, mark, size=11, color="#555555"))
            continue
        index = prefix + ((ri, ci) if ndim >= 2 else (ci,) if ndim == 1 else ())
        cells.append(Placed(index, lay.index_of(index), x, y))


def storage_slots(n_cells: int, needed: list[int]) -> list[int | None]:
    """Which storage cells to draw: all when few, else the ``needed`` ones (one-cell gaps filled).

    ``None`` entries are elision markers standing for the cells skipped between neighbours.
    """
    if n_cells <= MAX_STORAGE:
        return list(range(n_cells))
    keep = sorted(set(needed))
    if len(keep) > STORAGE_KEEP:
        keep = keep[: STORAGE_KEEP - 10] + keep[-10:]
    slots: list[int | None] = []
    previous = -1
    for cell in keep:
        gap = cell - previous - 1
        if gap == 1:
            slots.extend(range(previous + 1, cell))
        elif gap > 1:
            slots.append(None)
        slots.append(cell)
        previous = cell
    if previous < n_cells - 1:
        slots.append(None)
    return slots


def skipped_before(slots: list[int | None], position: int, n_cells: int) -> int:
    """How many storage cells the marker at ``slots[position]`` stands for."""
    before = slots[position - 1] if position > 0 else -1
    after = slots[position + 1] if position + 1 < len(slots) else n_cells
    return int(after) - int(before) - 1  # type: ignore[arg-type]


def text_color(face: tuple[float, ...]) -> str:
    """Black or white, whichever reads better on an RGB(A) face colour."""
    r, g, b = face[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"


def label_size(label: str, base: float = 8.0) -> float:
    """Shrink a cell label so long storage indices still fit in a 1x1 box."""
    return min(base, 26.0 / max(len(label), 1))
