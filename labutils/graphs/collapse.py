"""Make a big graph drawable: collapse nodes into the module call that made them, and long
linear runs of ops into one "chain" box. The result is a new AutogradGraph whose group nodes list
the full-graph nodes they stand for (``members``); the highlighted path is carried over."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Collection

from labutils.graphs import describe
from labutils.graphs.structure import (
    AUTOGRAD_KINDS,
    CHAIN,
    MODULE,
    OP,
    SAVED,
    SAVED_EDGE,
    AutogradGraph,
    GraphEdge,
    GraphNode,
)


def module_group(stack: tuple[str, ...], depth: int, expand: Collection[str]) -> str | None:
    """The module a node collapses into at ``depth`` (1 = outermost submodules), or None.

    A module named in ``expand`` is opened: its children become the boxes instead.
    """
    level = depth
    while level <= len(stack):
        if stack[level - 1] not in expand:
            return stack[level - 1]
        level += 1
    return None


def collapse_by_module(
    graph: AutogradGraph, depth: int, expand: Collection[str] = (), types: dict[str, str] | None = None
) -> AutogradGraph:
    """Replace every node created inside a module call (at ``depth``) by one box per module."""
    if depth < 1:
        raise ValueError("collapse depth counts from 1 (the model's direct submodules)")
    types = types or {}
    group_of = {}
    for node in graph.nodes.values():
        if node.kind in AUTOGRAD_KINDS:
            name = module_group(node.module_stack, depth, expand)
            if name is not None:
                group_of[node.id] = f"m:{name}"

    def make(group_id: str, members: list[GraphNode]) -> GraphNode:
        name = group_id.removeprefix("m:")
        title = f"{name} ({types[name]})" if name in types else name
        stack = members[0].module_stack
        return _group_node(group_id, MODULE, title, members, stack[: stack.index(name) + 1])

    return regroup(graph, group_of, make, f"collapsed by module at depth {depth}")


def compress_chains(graph: AutogradGraph, min_run: int = 3) -> AutogradGraph:
    """Replace each maximal run of >= ``min_run`` ops with one consumer and one input by a box."""
    into: Counter[str] = Counter()
    out: dict[str, list[str]] = {}
    for src, dst, _ in graph.grad_edges():
        into[dst] += 1
        out.setdefault(src, []).append(dst)
    linkable = {
        n for n, node in graph.nodes.items() if node.kind == OP and into[n] == 1 and len(out.get(n, ())) == 1
    }
    has_linkable_parent = {out[n][0] for n in linkable if out[n][0] in linkable}
    group_of: dict[str, str] = {}
    for start in (n for n in graph.nodes if n in linkable and n not in has_linkable_parent):
        run = [start]
        while (nxt := out[run[-1]][0]) in linkable and nxt not in group_of:
            run.append(nxt)
        if len(run) >= min_run:
            for node_id in run:
                group_of[node_id] = f"c{start}"

    def make(group_id: str, members: list[GraphNode]) -> GraphNode:
        counts = Counter(m.title for m in members if m.kind == OP)
        node = _group_node(group_id, CHAIN, f"chain of {sum(counts.values()):,} ops", members, ())
        node.lines[:1] = [f"{name} x{count:,}" for name, count in counts.most_common(2)]
        return node

    return regroup(graph, group_of, make, "compressed linear chains of ops")


def box_count(graph: AutogradGraph, show_saved: bool) -> int:
    """How many boxes a drawing of ``graph`` has (saved tensors of ops drawn as their own boxes)."""
    saved = sum(len(n.saved) for n in graph.nodes.values() if n.kind == OP) if show_saved else 0
    return len(graph.nodes) + saved


def with_saved_boxes(graph: AutogradGraph, show_saved: bool) -> AutogradGraph:
    """Add one box per saved tensor of each op (or, without ``show_saved``, a line on the op)."""
    nodes, edges = {}, list(graph.edges)
    for node_id, node in graph.nodes.items():
        if node.kind != OP or not node.saved:
            nodes[node_id] = node
        elif not show_saved:
            line = f"saved {len(node.saved)}: {describe.format_bytes(node.saved_bytes)}"
            nodes[node_id] = dataclasses.replace(node, lines=[*node.lines, line])
        else:
            nodes[node_id] = node
            for i, saved in enumerate(node.saved):
                box = f"{node_id}s{i}"
                lines = [
                    describe.describe_shape(saved.shape, saved.dtype),
                    describe.format_bytes(saved.nbytes),
                ]
                nodes[box] = GraphNode(
                    box, SAVED, saved.name, lines, module_stack=node.module_stack, nbytes=saved.nbytes
                )
                edges.append(GraphEdge(node_id, box, SAVED_EDGE))
    return dataclasses.replace(graph, nodes=nodes, edges=edges)


def _group_node(
    group_id: str, kind: str, title: str, members: list[GraphNode], stack: tuple[str, ...]
) -> GraphNode:
    autograd = [m for m in members if m.kind in AUTOGRAD_KINDS]
    params = [m.tensor for m in autograd if m.tensor is not None]
    storages = frozenset(s.storage for m in autograd for s in m.saved).union(*(m.storages for m in autograd))
    lines = [f"{sum(m.kind == OP for m in autograd):,} ops"]
    if params:
        numel = sum(t.numel() for t in params)
        lines.append(f"{len(params)} params, {numel:,} values")
        grads = [t.grad for t in params if t.grad is not None]
        if len(grads) == len(params):
            norm = sum(float(g.double().pow(2).sum()) for g in grads) ** 0.5
            lines.append(f"grad |.|={norm:.3g}")
    if storages:
        lines.append(f"saved {describe.format_bytes(sum(b for _, b in storages))}")
    return GraphNode(
        group_id,
        kind,
        title,
        lines,
        module_stack=stack,
        storages=storages,
        members=tuple(m.id for m in autograd),
    )


def regroup(
    graph: AutogradGraph,
    group_of: dict[str, str],
    make: Callable[[str, list[GraphNode]], GraphNode],
    note: str,
) -> AutogradGraph:
    """Merge the nodes mapped by ``group_of`` into group nodes built by ``make``."""
    if not group_of:
        return graph
    members: dict[str, list[GraphNode]] = {}
    for node_id, group in group_of.items():
        members.setdefault(group, []).append(graph.nodes[node_id])
    nodes: dict[str, GraphNode] = {}
    for node_id, node in graph.nodes.items():
        into = group_of.get(node_id)
        if into is None:
            nodes[node_id] = node
        elif into not in nodes:
            nodes[into] = make(into, members[into])

    get = group_of.get

    def g(node_id: str) -> str:
        return get(node_id, node_id)

    edges, seen = [], set()
    for old_src, old_dst, kind in graph.edges:
        src, dst = get(old_src, old_src), get(old_dst, old_dst)
        if src == dst:
            continue
        if src == old_src and dst == old_dst:
            edges.append(GraphEdge(src, dst, kind))  # untouched edges keep their multiplicity
        elif (src, dst, kind) not in seen:
            seen.add((src, dst, kind))
            edges.append(GraphEdge(src, dst, kind))
    path = [g(n) for n in graph.highlight_path]
    path = [n for i, n in enumerate(path) if i == 0 or n != path[i - 1]]
    return AutogradGraph(
        nodes,
        edges,
        list(graph.outputs),
        highlight_nodes=frozenset(g(n) for n in graph.highlight_nodes),
        highlight_edges=frozenset((g(s), g(d)) for s, d in graph.highlight_edges if g(s) != g(d)),
        highlight_path=path,
        notes=[*graph.notes, note],
    )
