"""The autograd graph behind a tensor as plain data: nodes, gradient edges, saved tensors, grads.

Edges point the way gradients flow: ``GraphEdge(src, dst, "grad")`` means ``dst.fn`` is in
``src.fn.next_functions`` (an output tensor node points at its ``grad_fn``). Each op lists the
tensors it saved for backward (``node.saved``); a drawing adds them as boxes joined by "saved"
edges. Traversal is iterative, so depth is unlimited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import torch
from torch import nn

from labutils.graphs import describe
from labutils.graphs.describe import SavedTensor

OP, LEAF, PARAM, SAVED, OUTPUT, MODULE, CHAIN = "op", "leaf", "param", "saved", "output", "module", "chain"
GRAD, SAVED_EDGE = "grad", "saved"
AUTOGRAD_KINDS = (OP, LEAF, PARAM)  # kinds that are one autograd Node each

Outputs = torch.Tensor | Sequence[torch.Tensor] | Mapping[str, torch.Tensor]
Params = Mapping[str, torch.Tensor] | nn.Module | None


class ModuleLookup(Protocol):
    """What the builder needs from a module recording (see ``labutils.graphs.modules``)."""

    def stack_of_node(self, fn: object) -> tuple[str, ...]: ...
    def stack_of_param(self, name: str) -> tuple[str, ...]: ...


@dataclass(slots=True)
class GraphNode:
    """One drawn box. ``fn`` is the autograd Node for op/leaf/param kinds."""

    id: str
    kind: str
    title: str
    lines: list[str] = field(default_factory=list)
    fn: object | None = None
    tensor: torch.Tensor | None = None  # leaf variable or output tensor
    module_stack: tuple[str, ...] = ()
    saved: tuple[SavedTensor, ...] = ()  # op: what it saved for backward
    saved_problem: str | None = None  # "freed" after backward, "modified in-place"
    storages: frozenset[tuple[int, int]] = frozenset()  # module/chain: memory saved inside
    members: tuple[str, ...] = ()  # module/chain node: ids of the full-graph nodes it stands for
    nbytes: int = 0  # saved tensor node: its bytes

    @property
    def saved_bytes(self) -> int:
        """Bytes this op saved for backward (each saved tensor's numel * element_size)."""
        return sum(s.nbytes for s in self.saved)


class GraphEdge(NamedTuple):
    """``src -> dst``: gradient flows from src into dst (kind "grad"), or src saved dst ("saved")."""

    src: str
    dst: str
    kind: str = GRAD


@dataclass
class AutogradGraph:
    """Nodes, edges and (optionally) the highlighted gradient path of one autograd graph."""

    nodes: dict[str, GraphNode]
    edges: list[GraphEdge]
    outputs: list[str]
    highlight_nodes: frozenset[str] = frozenset()
    highlight_edges: frozenset[tuple[str, str]] = frozenset()
    highlight_path: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def autograd_nodes(self) -> list[GraphNode]:
        """Nodes that are one autograd ``Node`` each (ops and leaf accumulators)."""
        return [n for n in self.nodes.values() if n.kind in AUTOGRAD_KINDS]

    def grad_edges(self) -> list[GraphEdge]:
        """Edges along which gradients flow (duplicates kept: ``x * x`` has two)."""
        return [e for e in self.edges if e.kind == GRAD]

    def node_of(self, fn: object) -> GraphNode:
        """The node standing for autograd Node ``fn`` (KeyError if it is not in this graph)."""
        for node in self.nodes.values():
            if node.fn is fn:
                return node
        raise KeyError(f"{fn!r} is not in this graph")

    def storages(self) -> set[tuple[int, int]]:
        """(address, bytes) of every storage a saved tensor lives in."""
        found: set[tuple[int, int]] = set()
        for node in self.nodes.values():
            found.update(s.storage for s in node.saved)
            found |= node.storages
        return found

    @property
    def saved_bytes(self) -> int:
        """Memory the saved tensors keep alive, each storage counted once."""
        return sum(nbytes for _, nbytes in self.storages())

    def summary(self) -> str:
        """One line: how many autograd nodes, edges and saved bytes."""
        return (
            f"{len(self.autograd_nodes())} autograd nodes, {len(self.grad_edges())} gradient edges, "
            f"saved {describe.format_bytes(self.saved_bytes)}"
        )


def named_outputs(output: Outputs) -> list[tuple[str, torch.Tensor]]:
    """Normalise a tensor, a sequence of tensors or a ``{name: tensor}`` mapping."""
    if isinstance(output, torch.Tensor):
        return [("output", output)]
    if isinstance(output, Mapping):
        return list(output.items())
    return [(f"output[{i}]", t) for i, t in enumerate(output)]


def param_names(params: Params) -> dict[int, str]:
    """``id(tensor) -> name`` from a ``{name: tensor}`` mapping or a module's named parameters."""
    if params is None:
        return {}
    items = params.named_parameters() if isinstance(params, nn.Module) else params.items()
    return {id(t): name for name, t in items}


def build_graph(
    output: Outputs, params: Params = None, *, modules: ModuleLookup | None = None, show_attrs: bool = False
) -> AutogradGraph:
    """Walk the autograd graph behind ``output`` (iteratively) and describe every node.

    ``params`` names parameters (a mapping or an ``nn.Module``); ``modules`` (a recording from
    :func:`labutils.graphs.record_modules`) tags each node with the modules that created it.
    Leaves and outputs show their ``.grad`` as it is now (draw before and after backward to compare).
    """
    builder = _Builder(param_names(params), modules, show_attrs)
    with describe.gc_paused():
        for name, tensor in named_outputs(output):
            builder.add_output(name, tensor)
    return builder.finish()


class _Builder:
    def __init__(self, names: dict[int, str], modules: ModuleLookup | None, show_attrs: bool) -> None:
        self.names, self.modules, self.show_attrs = names, modules, show_attrs
        self.nodes: dict[str, GraphNode] = {}
        self.edges: list[GraphEdge] = []
        self.outputs: list[str] = []
        self.ids: dict[int, str] = {}  # id(autograd Node) -> node id; nodes are held in self.nodes
        self.stack: list[object] = []

    def add_output(self, name: str, tensor: torch.Tensor) -> None:
        if not tensor.requires_grad:
            raise ValueError(
                f"{name} does not require grad, so it has no autograd graph "
                "(computed under no_grad/inference_mode, detached, or from constants only)"
            )
        node_id = f"t{len(self.outputs)}"
        lines = [describe.describe_tensor(tensor)]
        grad = describe.grad_line(tensor)
        if grad:
            lines.append(grad)
        self.nodes[node_id] = GraphNode(node_id, OUTPUT, name, lines, tensor=tensor)
        self.outputs.append(node_id)
        fn = tensor.grad_fn if tensor.grad_fn is not None else _accumulator(tensor)
        self.edges.append(GraphEdge(node_id, self._visit(fn)))
        self._drain()

    def finish(self) -> AutogradGraph:
        return AutogradGraph(self.nodes, self.edges, self.outputs)

    def _visit(self, fn: object) -> str:
        node_id = self.ids.get(id(fn))
        if node_id is None:
            node_id = f"n{len(self.ids)}"
            self.ids[id(fn)] = node_id
            self.nodes[node_id] = self._describe(node_id, fn)
            self.stack.append(fn)
        return node_id

    def _drain(self) -> None:
        edges, stack, ids, visit = self.edges, self.stack, self.ids, self._visit
        while stack:
            fn = stack.pop()
            src = ids[id(fn)]
            for next_fn, _ in fn.next_functions:  # type: ignore[attr-defined]
                if next_fn is not None:
                    dst = ids.get(id(next_fn)) or visit(next_fn)
                    edges.append(GraphEdge(src, dst))

    def _describe(self, node_id: str, fn: object) -> GraphNode:
        if type(fn) is _ACCUMULATE_GRAD:
            return self._describe_leaf(node_id, fn, fn.variable)  # type: ignore[union-attr]
        stack = self.modules.stack_of_node(fn) if self.modules else ()
        saved, problem = describe.saved_tensors(fn)
        node = GraphNode(
            node_id, OP, type(fn).__name__, fn=fn, module_stack=stack, saved=saved, saved_problem=problem
        )
        if problem:
            node.lines.append(f"saved tensors {problem}")
        elif self.show_attrs:
            node.lines.extend(describe.attr_lines(fn))
        return node

    def _describe_leaf(self, node_id: str, fn: object, variable: torch.Tensor) -> GraphNode:
        name = self.names.get(id(variable))
        lines = [describe.describe_tensor(variable)]
        grad = describe.grad_line(variable)
        if grad:
            lines.append(grad)
        stack = self.modules.stack_of_param(name) if (self.modules and name) else ()
        kind, title = (PARAM, name) if name else (LEAF, "leaf")
        return GraphNode(node_id, kind, title, lines, fn=fn, tensor=variable, module_stack=stack)


_ACCUMULATE_GRAD = type(torch.zeros(1, requires_grad=True).view(1).grad_fn.next_functions[0][0])  # type: ignore[union-attr]


def _accumulator(leaf: torch.Tensor) -> object:
    """The AccumulateGrad node of a leaf that requires grad (how autograd reaches a leaf)."""
    return leaf.view_as(leaf).grad_fn.next_functions[0][0]  # type: ignore[union-attr]
