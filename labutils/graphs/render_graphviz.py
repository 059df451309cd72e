"""Render a (drawn) AutogradGraph with graphviz: dot source always, images when ``dot`` exists."""

from __future__ import annotations

import shutil

import graphviz

from labutils.graphs.structure import CHAIN, GRAD, MODULE, AutogradGraph
from labutils.graphs.style import FILL, HIGHLIGHT, label

NODE_ATTR = dict(style="filled", shape="box", fontsize="10", height="0.2", fontname="monospace")
RENDER_ERRORS = (graphviz.ExecutableNotFound, graphviz.CalledProcessError, OSError)


def dot_available() -> bool:
    """True when the graphviz ``dot`` program is on PATH."""
    return shutil.which("dot") is not None


def to_digraph(drawn: AutogradGraph) -> graphviz.Digraph:
    """A ``graphviz.Digraph``: edges drawn forward (input -> consumer), the gradient path in red."""
    dot = graphviz.Digraph(node_attr=NODE_ATTR, graph_attr=dict(ranksep="0.3", nodesep="0.25"))
    name = {node_id: f"n{i}" for i, node_id in enumerate(drawn.nodes)}  # dot-safe ids (no ':' ports)
    for node in drawn.nodes.values():
        attrs = {"fillcolor": FILL[node.kind]}
        if node.kind in (MODULE, CHAIN):
            attrs["style"] = "filled,rounded"
        if node.id in drawn.highlight_nodes:
            attrs.update(color=HIGHLIGHT, penwidth="2.5")
        dot.node(name[node.id], label(node), **attrs)
    for edge in drawn.edges:
        if edge.kind == GRAD:
            on_path = (edge.src, edge.dst) in drawn.highlight_edges
            dot.edge(
                name[edge.dst], name[edge.src], **(dict(color=HIGHLIGHT, penwidth="2.5") if on_path else {})
            )
        else:
            dot.edge(name[edge.dst], name[edge.src], dir="none", style="dashed", color="darkorange")
    return dot


def render_graphviz(drawn: AutogradGraph, fmt: str) -> bytes:
    """Run ``dot -T<fmt>`` on the graph (raises one of RENDER_ERRORS without a working ``dot``)."""
    return to_digraph(drawn).pipe(format=fmt)
