"""``draw_graph``: the autograd graph of a tensor as a picture that shows inline in Jupyter."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from pathlib import Path

from labutils.graphs.collapse import box_count, collapse_by_module, compress_chains, with_saved_boxes
from labutils.graphs.describe import gc_paused
from labutils.graphs.modules import ModuleRecord
from labutils.graphs.paths import with_highlight
from labutils.graphs.render_graphviz import RENDER_ERRORS, dot_available, render_graphviz, to_digraph
from labutils.graphs.render_matplotlib import render_matplotlib
from labutils.graphs.structure import AutogradGraph, Outputs, Params, build_graph

RENDERERS = ("auto", "graphviz", "matplotlib")


class GraphDrawing:
    """A drawn autograd graph. Displays inline in Jupyter (SVG by default) and saves to a file.

    Attributes: ``graph`` (the full graph as data), ``drawn`` (what is drawn, after collapsing),
    ``renderer`` ("graphviz" or "matplotlib"), ``notes`` (what was simplified and why).
    """

    def __init__(self, graph: AutogradGraph, drawn: AutogradGraph, renderer: str, fmt: str = "svg") -> None:
        self.graph, self.drawn, self.renderer, self.fmt = graph, drawn, renderer, fmt
        self.notes: list[str] = list(drawn.notes)
        self._images: dict[str, bytes] = {}

    @property
    def source(self) -> str:
        """The graphviz dot source of the drawing (available even without the ``dot`` program)."""
        return to_digraph(self.drawn).source

    def render(self, fmt: str = "svg") -> bytes:
        """Image bytes in ``fmt`` (svg, png, pdf); falls back to matplotlib if ``dot`` fails."""
        if fmt not in self._images:
            self._images[fmt] = self._render(fmt)
        return self._images[fmt]

    def _render(self, fmt: str) -> bytes:
        if self.renderer == "graphviz":
            try:
                return render_graphviz(self.drawn, fmt)
            except RENDER_ERRORS as err:
                self.renderer = "matplotlib"
                self.notes.append(f"graphviz failed ({type(err).__name__}); drew with matplotlib")
        return render_matplotlib(self.drawn, fmt)

    def svg(self) -> str:
        """The drawing as an SVG document."""
        return self.render("svg").decode("utf-8")

    def png(self) -> bytes:
        """The drawing as PNG bytes."""
        return self.render("png")

    def save(self, path: str | Path) -> Path:
        """Write the drawing; the suffix picks the format (.svg, .png, .pdf, or .dot/.gv for source)."""
        path = Path(path)
        fmt = path.suffix.lstrip(".").lower()
        if fmt in ("dot", "gv"):
            path.write_text(self.source)
        elif fmt in ("svg", "png", "pdf"):
            path.write_bytes(self.render(fmt))
        else:
            raise ValueError(f"cannot save a graph as {path.suffix!r}: use .svg, .png, .pdf or .dot")
        return path

    def _repr_svg_(self) -> str | None:
        return self.svg() if self.fmt == "svg" else None

    def _repr_png_(self) -> bytes | None:
        return self.png() if self.fmt == "png" else None

    def __repr__(self) -> str:
        notes = f"; {'; '.join(self.notes)}" if self.notes else ""
        return (
            f"<GraphDrawing: {len(self.drawn.nodes)} boxes for {self.graph.summary()}; "
            f"renderer={self.renderer}{notes}>"
        )


def draw_graph(
    output: Outputs,
    params: Params = None,
    *,
    highlight: object = None,
    modules: ModuleRecord | None = None,
    collapse: int | str | None = "auto",
    expand: Collection[str] = (),
    show_saved: bool = True,
    show_attrs: bool = False,
    max_nodes: int | None = 150,
    renderer: str = "auto",
    fmt: str = "svg",
) -> GraphDrawing:
    """Draw the autograd graph behind ``output`` (a tensor, a list, or a ``{name: tensor}`` dict).

    Args:
        params: names for parameters: ``dict(model.named_parameters())`` or the module itself.
        highlight: a leaf/parameter (tensor or name) or autograd node: the gradient path from the
            output(s) to it is drawn in red.
        modules: a :func:`record_modules` recording of the forward pass, to collapse by module.
        collapse: module depth to collapse at (1 = the model's direct submodules); "auto" collapses
            only when the graph has more than ``max_nodes`` boxes; None never collapses.
        expand: module names to open when collapsing (their children become the boxes).
        show_saved: draw each tensor saved for backward (orange) with its shape and bytes.
        show_attrs: list non-tensor saved attributes (``dim``, ``alpha`` ...) on each op.
        max_nodes: above this many boxes, linear chains of ops are drawn as one box (None: never).
        renderer: "graphviz" (needs the ``dot`` program), "matplotlib", or "auto" (graphviz if found).
        fmt: what Jupyter displays: "svg" or "png".
    """
    if renderer not in RENDERERS:
        raise ValueError(f"renderer must be one of {RENDERERS}, got {renderer!r}")
    graph = build_graph(
        output,
        params if params is not None else _record_params(modules),
        modules=modules,
        show_attrs=show_attrs,
    )
    if highlight is not None:
        graph = with_highlight(graph, highlight)
    with gc_paused():
        drawn = with_saved_boxes(
            simplify(graph, modules, collapse, expand, max_nodes, show_saved), show_saved
        )
    if renderer == "auto":
        renderer = "graphviz" if dot_available() else "matplotlib"
    return GraphDrawing(graph, drawn, renderer, fmt)


def _record_params(modules: ModuleRecord | None) -> Params:
    return None if modules is None else modules.named_params


def simplify(
    graph: AutogradGraph,
    modules: ModuleRecord | None,
    collapse: int | str | None,
    expand: Collection[str],
    max_nodes: int | None,
    show_saved: bool = True,
) -> AutogradGraph:
    """Collapse by module and compress chains so that (if possible) at most ``max_nodes`` boxes remain."""
    limit = max_nodes if max_nodes is not None else float("inf")
    drawn = graph
    if isinstance(collapse, int):
        if modules is None:
            raise ValueError(
                "collapse by module needs modules=: record the forward pass with "
                "`with record_modules(model) as rec:` and pass modules=rec"
            )
        drawn = collapse_by_module(graph, collapse, expand, modules.types)
    elif collapse == "auto" and modules is not None and box_count(graph, show_saved) > limit:
        drawn = _auto_collapse(graph, modules, expand, limit, show_saved)
    elif collapse not in ("auto", None):
        raise ValueError(f"collapse must be a depth (int), 'auto' or None, got {collapse!r}")
    if box_count(drawn, show_saved) > limit:
        drawn = compress_chains(drawn)
    if (boxes := box_count(drawn, show_saved)) > limit:
        drawn = dataclasses.replace(
            drawn,
            notes=[*drawn.notes, f"{boxes} boxes: still big (record_modules + collapse= makes it smaller)"],
        )
    return drawn


def _auto_collapse(
    graph: AutogradGraph, modules: ModuleRecord, expand: Collection[str], limit: float, show_saved: bool
) -> AutogradGraph:
    """The deepest module collapse that fits in ``limit`` boxes (depth 1 if none does)."""
    deepest = max((len(s) for s in modules.stacks), default=1)
    for depth in range(deepest, 0, -1):
        drawn = collapse_by_module(graph, depth, expand, modules.types)
        if box_count(drawn, show_saved) <= limit:
            return drawn
    return drawn
