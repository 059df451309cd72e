"""Fallback renderer: the layered layout drawn with matplotlib (no graphviz binary needed)."""

from __future__ import annotations

import io

import matplotlib
from matplotlib.figure import Figure

from labutils.graphs.layout import layered_layout
from labutils.graphs.structure import GRAD, AutogradGraph
from labutils.graphs.style import FILL, HIGHLIGHT, LEGEND, label

_CHAR_IN, _LINE_IN, _FONT = 0.075, 0.16, 8
_MAX_IN = 200.0


def render_matplotlib(drawn: AutogradGraph, fmt: str) -> bytes:
    """Draw ``drawn`` top (leaves) to bottom (outputs) and return the image bytes in ``fmt``."""
    texts = {n: label(node) for n, node in drawn.nodes.items()}
    coords = layered_layout(list(drawn.nodes), [(e.src, e.dst) for e in drawn.edges])
    col_in = max(1.4, _CHAR_IN * max(len(line) for t in texts.values() for line in t.split("\n")) + 0.4)
    row_in = max(0.6, _LINE_IN * max(t.count("\n") + 1 for t in texts.values()) + 0.45)
    cols = max(x for x, _ in coords.values()) * 2 + 1
    rows = max(y for _, y in coords.values()) + 1
    width, height = min(cols * col_in + 0.5, _MAX_IN), min(rows * row_in + 0.6, _MAX_IN)
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(-cols / 2, cols / 2)
    ax.set_ylim(-0.6, rows - 0.2)
    ax.axis("off")
    half_height = {n: (_LINE_IN * (t.count("\n") + 1) + 0.2) / row_in / 2 for n, t in texts.items()}
    for edge in drawn.edges:
        _draw_edge(ax, drawn, edge, coords, half_height)
    for node_id, node in drawn.nodes.items():
        on_path = node_id in drawn.highlight_nodes
        ax.text(
            *coords[node_id],
            texts[node_id],
            ha="center",
            va="center",
            fontsize=_FONT,
            family="monospace",
            zorder=3,
            bbox=dict(
                boxstyle="round,pad=0.3",
                fc=FILL[node.kind],
                ec=HIGHLIGHT if on_path else "black",
                lw=2.5 if on_path else 0.8,
            ),
        )
    ax.text(-cols / 2 + 0.05, rows - 0.25, LEGEND, fontsize=6, color="dimgray", va="top")
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buffer, format=fmt, dpi=min(100.0, 30000 / max(width, height)))
    return buffer.getvalue()


def _draw_edge(ax, drawn: AutogradGraph, edge, coords, half_height) -> None:
    """Forward arrow from the input (``edge.dst``) to its consumer (``edge.src``)."""
    (x0, y0), (x1, y1) = coords[edge.dst], coords[edge.src]
    if edge.kind == GRAD:
        on_path = (edge.src, edge.dst) in drawn.highlight_edges
        style = dict(arrowstyle="-|>", color=HIGHLIGHT if on_path else "black", lw=2.2 if on_path else 0.8)
    else:
        style = dict(arrowstyle="-", color="darkorange", lw=0.8, linestyle="--")
    down = 1 if y0 >= y1 else -1
    ax.annotate(
        "",
        xy=(x1, y1 + down * half_height[edge.src]),
        xytext=(x0, y0 - down * half_height[edge.dst]),
        arrowprops=style,
        zorder=1,
    )
