"""Plans for the two diagrams of :mod:`labutils.strides`: one tensor (``show``) and several (``compare``)."""

from __future__ import annotations

import math

import matplotlib as mpl
from matplotlib.colors import to_hex, to_rgba

from labutils.strides.layout import Layout
from labutils.strides.plan import (
    Box,
    DrawnCell,
    Grid,
    Line,
    Plan,
    Text,
    label_size,
    layout_grid,
    skipped_before,
    storage_slots,
    text_color,
)

STRIP_GAP = 2.6  # vertical room between the storage strip and the logical grid (mapping lines)
STRIP_WRAP = 32  # storage cells per row of a strip
ROW_PITCH = 1.6  # vertical distance between the rows of a wrapped strip
MAX_LINES = 48  # draw mapping lines only when at most this many logical cells are drawn
GRID_TITLE = 2.4  # room for the three title lines above each grid in ``compare``
UNREAD = "#f4f4f4"
TENSOR_COLORS = [to_hex(c) for c in mpl.colormaps["tab10"].colors]  # type: ignore[attr-defined]


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def describe(lay: Layout) -> str:
    """One-line summary used as a diagram title."""
    parts = [
        f"shape {lay.shape}",
        f"stride {lay.stride}",
        f"offset {lay.offset}",
        str(lay.dtype).removeprefix("torch."),
        f"contiguous: {_yes(lay.is_contiguous)}",
    ]
    return "   ".join(parts)


def _flags(lay: Layout) -> str:
    flags = []
    if lay.is_channels_last:
        flags.append("channels_last")
    if lay.zero_stride_dims:
        flags.append(f"stride 0 in dim {', '.join(map(str, lay.zero_stride_dims))} (expand)")
    if lay.overlapping:
        flags.append(f"{lay.numel} elements read {lay.distinct_cells} distinct cells")
    return "   ".join(flags)


def _reads(lay: Layout, cell: int, drawn: set[int]) -> int:
    """Read count of a storage cell; when too costly to count, 1 if a drawn element reads it."""
    count = lay.reads(cell)
    return (1 if cell in drawn else 0) if count is None else count


def strip_size(n_slots: int) -> tuple[float, float]:
    """Width and height (cell units) of a strip of ``n_slots`` slots, in rows of at most STRIP_WRAP."""
    rows = max(1, math.ceil(n_slots / STRIP_WRAP))
    return float(max(1, math.ceil(n_slots / rows))), (rows - 1) * ROW_PITCH + 1.0


def _strip(
    plan: Plan, slots: list[int | None], n_cells: int, x0: float, y0: float, faces: dict[int, list[str]]
) -> dict[int, tuple[float, float]]:
    """Draw one storage strip (wrapped into rows); ``faces[cell]`` lists the colours of its readers.

    Returns the top-left corner of every drawn cell.
    """
    xs: dict[int, tuple[float, float]] = {}
    per_row = int(strip_size(len(slots))[0])
    for pos, cell in enumerate(slots):
        x, y = x0 + pos % per_row, y0 + (pos // per_row) * ROW_PITCH
        if cell is None:
            plan.texts.append(Text(x + 0.5, y + 0.4, "⋯", size=12, color="#555555"))
            plan.texts.append(
                Text(x + 0.5, y + 0.85, f"+{skipped_before(slots, pos, n_cells)}", size=6, color="#555555")
            )
            continue
        xs[cell] = (x, y)
        colours = faces.get(cell, [UNREAD])
        width = 1.0 / len(colours)
        for k, colour in enumerate(colours):
            plan.boxes.append(Box(x + k * width, y, width, 1.0, colour, edge="none"))
        label = str(cell)
        ink = "#888888" if colours == [UNREAD] else text_color(to_rgba(colours[0]))
        plan.boxes.append(Box(x, y, 1.0, 1.0, "none", label=label, label_color=ink, size=label_size(label)))
    plan.storage_slots.append(list(slots))
    return xs


def _grid_boxes(plan: Plan, grid: Grid, name: str, x0: float, y0: float, face_of) -> None:
    for cell in grid.cells:
        face = face_of(cell.storage_index)
        label = str(cell.storage_index)
        plan.boxes.append(
            Box(
                x0 + cell.x,
                y0 + cell.y,
                1.0,
                1.0,
                face,
                label=label,
                label_color=text_color(to_rgba(face)),
                size=label_size(label),
            )
        )
        plan.cells.append(DrawnCell(name, cell.index, cell.storage_index))
    for text in grid.texts:
        plan.texts.append(Text(x0 + text.x, y0 + text.y, text.s, text.size, text.color))


def plan_show(lay: Layout, name: str = "t") -> Plan:
    """The storage strip of one tensor above its logical grid, linked by colour, labels and lines."""
    plan = Plan()
    grid = layout_grid(lay, name)
    slots = storage_slots(lay.storage_numel, [c.storage_index for c in grid.cells])
    shown = sorted({c.storage_index for c in grid.cells} | {cell for cell in slots if cell is not None})
    rank = {cell: k for k, cell in enumerate(shown)}
    cmap = mpl.colormaps["viridis"]

    def face_of(cell: int) -> str:
        return to_hex(cmap(0.1 + 0.85 * rank.get(cell, 0) / max(len(shown) - 1, 1)))

    drawn = {c.storage_index for c in grid.cells}
    counts = {cell: _reads(lay, cell, drawn) for cell in slots if cell is not None}
    faces = {cell: [face_of(cell)] for cell, count in counts.items() if count > 0}
    strip_w, strip_h = strip_size(len(slots))
    width = max(strip_w, grid.width)
    strip_x, strip_y = (width - strip_w) / 2, 2.2
    plan.texts.append(Text(0, 0.3, f"{name}:  {describe(lay)}", size=10, ha="left", bold=True))
    plan.texts.append(Text(0, 1.0, _flags(lay), size=8, ha="left", color="#444444"))
    plan.texts.append(
        Text(
            strip_x,
            strip_y - 0.35,
            f"storage: {lay.storage_numel} x {str(lay.dtype).removeprefix('torch.')}",
            size=8,
            ha="left",
            color="#333333",
        )
    )
    xs = _strip(plan, slots, lay.storage_numel, strip_x, strip_y, faces)
    for cell, count in counts.items():
        if count > 1:
            plan.texts.append(
                Text(xs[cell][0] + 0.5, xs[cell][1] + 1.25, f"x{count}", size=7, color="#b03030")
            )
    grid_x, grid_y = (width - grid.width) / 2, strip_y + strip_h + STRIP_GAP
    _grid_boxes(plan, grid, name, grid_x, grid_y, face_of)
    if len(grid.cells) <= MAX_LINES and strip_h == 1.0:  # lines only to a one-row strip
        for placed in grid.cells:
            if placed.storage_index in xs:
                sx, sy = xs[placed.storage_index]
                plan.lines.append(
                    Line(
                        grid_x + placed.x + 0.5,
                        grid_y + placed.y,
                        sx + 0.5,
                        sy + 1.0,
                        face_of(placed.storage_index),
                    )
                )
    plan.width, plan.height = width, grid_y + grid.height
    return plan


def _light(colour: str, amount: float = 0.45) -> str:
    r, g, b, _ = to_rgba(colour)
    return to_hex((1 - amount * (1 - r), 1 - amount * (1 - g), 1 - amount * (1 - b)))


def plan_compare(layouts: list[Layout], names: list[str]) -> Plan:
    """Several tensors: one strip per distinct storage, cells striped by the tensors reading them."""
    plan = Plan()
    colours = [TENSOR_COLORS[k % len(TENSOR_COLORS)] for k in range(len(layouts))]
    grids = [layout_grid(lay, name) for lay, name in zip(layouts, names, strict=True)]
    groups: dict[int, list[int]] = {}
    for k, lay in enumerate(layouts):
        groups.setdefault(lay.storage_ptr, []).append(k)
    y = 0.0
    strips: list[tuple[float, list[int | None], int, dict[int, list[str]], str]] = []
    for number, members in enumerate(groups.values(), start=1):
        unit = min(layouts[k].itemsize for k in members)
        n_cells = layouts[members[0]].storage_nbytes // unit
        needed = [c.storage_index * (layouts[k].itemsize // unit) for k in members for c in grids[k].cells]
        slots = storage_slots(n_cells, needed)
        faces: dict[int, list[str]] = {}
        for k in members:
            scale = layouts[k].itemsize // unit
            drawn = {c.storage_index for c in grids[k].cells}
            for cell in (s for s in slots if s is not None):
                if _reads(layouts[k], cell // scale, drawn) > 0:
                    faces.setdefault(cell, []).append(colours[k])
        who = ", ".join(names[k] for k in members)
        base = names[0]
        kind = (
            f"shared by {who}"
            if len(members) > 1
            else (f"{who} only" if members[0] == 0 else f"{who} only: its own memory, a copy (not {base}'s)")
        )
        title = (
            f"storage #{number} ({n_cells} x {str(layouts[members[0]].dtype).removeprefix('torch.')}): {kind}"
        )
        strips.append((y, slots, n_cells, faces, title))
        y += 1.4 + strip_size(len(slots))[1]
    grid_y0 = y + 0.8
    x, row_top, row_h, width = 0.0, grid_y0, 0.0, 0.0
    placements = []
    for k, grid in enumerate(grids):
        block_w = max(grid.width, *_title_widths(layouts[k], names[k]))
        if x > 0 and x + block_w > 44:
            x, row_top, row_h = 0.0, row_top + GRID_TITLE + row_h + 1.2, 0.0
        placements.append((x, row_top))
        width = max(width, x + block_w)
        x += block_w + 1.5
        row_h = max(row_h, grid.height)
    strip_w = max(strip_size(len(s[1]))[0] for s in strips)
    width = max(width, strip_w)
    for y_strip, slots, n_cells, faces, title in strips:
        plan.texts.append(Text(0, y_strip + 0.2, title, size=8, ha="left", color="#333333"))
        _strip(plan, slots, n_cells, 0.0, y_strip + 0.6, faces)
    for k, (grid, (gx, gy)) in enumerate(zip(grids, placements, strict=True)):
        lay = layouts[k]
        shared = (
            "own storage, a copy"
            if lay.storage_ptr != layouts[0].storage_ptr
            else ("base" if k == 0 else f"view of {names[0]}")
        )
        first, second, third = _grid_titles(lay, names[k], shared)
        plan.texts.append(Text(gx, gy + 0.4, first, size=9, ha="left", color=colours[k], bold=True))
        plan.texts.append(Text(gx, gy + 1.1, second, size=7, ha="left", color="#333333"))
        plan.texts.append(Text(gx, gy + 1.7, third, size=7, ha="left", color="#333333"))
        _grid_boxes(plan, grid, names[k], gx, gy + GRID_TITLE, lambda _cell, c=colours[k]: _light(c))
    plan.width, plan.height = width, row_top + GRID_TITLE + row_h
    return plan


def _grid_titles(lay: Layout, name: str, shared: str) -> list[str]:
    return [
        f"{name}  ({shared})",
        f"shape {lay.shape}  stride {lay.stride}  offset {lay.offset}",
        f"contiguous: {_yes(lay.is_contiguous)}   {_flags(lay)}".rstrip(),
    ]


def _title_widths(lay: Layout, name: str) -> list[float]:
    """Rough widths (cell units) of the three title lines above a grid, so grids do not collide."""
    first, *rest = _grid_titles(lay, name, "own storage, a copy")
    return [0.22 * len(first), *(0.16 * len(line) for line in rest)]
