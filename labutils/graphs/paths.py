"""The path a gradient takes: from the output(s) to one leaf, parameter or op of the graph."""

from __future__ import annotations

import dataclasses
from collections import deque

import torch

from labutils.graphs.structure import AutogradGraph, GraphNode


def find_target(graph: AutogradGraph, target: object) -> str:
    """Node id for a highlight target: a parameter/output name, a tensor, or an autograd Node."""
    for node in graph.nodes.values():
        if _matches(node, target):
            return node.id
    raise ValueError(
        f"{_describe(target)} is not in this autograd graph: no gradient from the output "
        "reaches it (it does not require grad, was detached, or was not used)"
    )


def _matches(node: GraphNode, target: object) -> bool:
    if isinstance(target, str):
        return node.title == target and (node.fn is not None or node.kind == "output")
    if isinstance(target, torch.Tensor):
        if target.grad_fn is not None:
            return node.fn is target.grad_fn
        return node.tensor is target and node.fn is not None
    return node.fn is target


def _describe(target: object) -> str:
    if isinstance(target, torch.Tensor):
        return f"tensor of shape {tuple(target.shape)}"
    return repr(target)


def with_highlight(graph: AutogradGraph, target: object) -> AutogradGraph:
    """A copy of ``graph`` highlighting every node and edge a gradient crosses to reach ``target``.

    ``highlight_nodes``: nodes from which the target can be reached along gradient edges;
    ``highlight_edges``: gradient edges between two of them; ``highlight_path``: one shortest
    path from an output to the target.
    """
    target_id = find_target(graph, target)
    grad_edges = graph.grad_edges()
    into: dict[str, list[str]] = {}
    for src, dst, _ in grad_edges:
        into.setdefault(dst, []).append(src)
    reaching = _closure(target_id, into)
    edges = frozenset((src, dst) for src, dst, _ in grad_edges if src in reaching and dst in reaching)
    return dataclasses.replace(
        graph,
        highlight_nodes=frozenset(reaching),
        highlight_edges=edges,
        highlight_path=shortest_path(graph, target_id),
    )


def _closure(start: str, neighbours: dict[str, list[str]]) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for other in neighbours.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def shortest_path(graph: AutogradGraph, target_id: str) -> list[str]:
    """Node ids of a shortest gradient path from any output to ``target_id`` (breadth first)."""
    out: dict[str, list[str]] = {}
    for src, dst, _ in graph.grad_edges():
        out.setdefault(src, []).append(dst)
    came_from: dict[str, str | None] = {o: None for o in graph.outputs}
    queue = deque(graph.outputs)
    while queue:
        node = queue.popleft()
        if node == target_id:
            break
        for nxt in out.get(node, ()):
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    if target_id not in came_from:
        return []
    path: list[str] = []
    step: str | None = target_id
    while step is not None:
        path.append(step)
        step = came_from[step]
    return path[::-1]
