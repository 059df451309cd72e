"""Colours and labels shared by both renderers (torchviz's colour conventions)."""

from __future__ import annotations

from labutils.graphs.structure import CHAIN, LEAF, MODULE, OP, OUTPUT, PARAM, SAVED, GraphNode

FILL = {  # hex, so graphviz and matplotlib agree
    OP: "#d3d3d3",  # a backward node (torchviz: grey)
    LEAF: "#add8e6",  # a leaf whose .grad backward fills (torchviz: blue)
    PARAM: "#add8e6",
    SAVED: "#ffa500",  # a tensor saved for backward (torchviz: orange)
    OUTPUT: "#caff70",  # the tensor(s) drawn from (torchviz: green)
    MODULE: "#e6e6fa",
    CHAIN: "#dcdcdc",
}
HIGHLIGHT = "red"
LEGEND = (
    "grey: backward op | blue: leaf/parameter | orange: saved tensor | green: output | "
    "arrows: forward data flow, gradients flow against them"
)


def label(node: GraphNode) -> str:
    """The text of a node's box: title then detail lines."""
    return "\n".join([node.title, *node.lines])
