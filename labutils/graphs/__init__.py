"""Autograd graphs you can look at: ``draw_graph(loss, params=model)`` in a notebook cell.

- :func:`draw_graph` draws leaves, named parameters, saved tensors (shape, bytes), grads after
  backward, the gradient path to a chosen leaf, and collapses big graphs by module.
- :func:`build_graph` returns the same structure as data (nodes, gradient edges, saved bytes).
- :func:`record_modules` records which module call created each node (for ``collapse=``).

graphviz's ``dot`` renders when present; otherwise a layered layout is drawn with matplotlib.
"""

from labutils.graphs.drawing import GraphDrawing, draw_graph
from labutils.graphs.modules import ModuleRecord, record_modules
from labutils.graphs.paths import with_highlight
from labutils.graphs.structure import AutogradGraph, GraphEdge, GraphNode, build_graph

__all__ = [
    "AutogradGraph",
    "GraphDrawing",
    "GraphEdge",
    "GraphNode",
    "ModuleRecord",
    "build_graph",
    "draw_graph",
    "record_modules",
    "with_highlight",
]
