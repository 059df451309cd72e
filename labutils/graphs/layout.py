"""A layered (Sugiyama-style, simplified) layout for the fallback renderer: no graphviz needed.

Ranks: longest path from the outputs along the edges (cycles, possible after collapsing a module
called twice, are broken at back edges). Order within a rank: a few barycenter sweeps.
"""

from __future__ import annotations

from collections.abc import Sequence

_SWEEPS = 4


def topological_order(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> list[str]:
    """Reverse post-order of an iterative depth-first search: sources first, back edges ignored."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for src, dst in edges:
        succ[src].append(dst)
    visited: set[str] = set()
    post: list[str] = []
    for root in nodes:
        if root in visited:
            continue
        visited.add(root)
        stack = [(root, iter(succ[root]))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                post.append(node)
            elif child not in visited:
                visited.add(child)
                stack.append((child, iter(succ[child])))
    return post[::-1]


def assign_ranks(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Longest-path rank of each node (sources at 0); edges against the order are ignored."""
    order = topological_order(nodes, edges)
    position = {n: i for i, n in enumerate(order)}
    rank = dict.fromkeys(order, 0)
    incoming: dict[str, list[str]] = {n: [] for n in nodes}
    for src, dst in edges:
        if position[src] < position[dst]:
            incoming[dst].append(src)
    for node in order:
        if incoming[node]:
            rank[node] = max(rank[p] + 1 for p in incoming[node])
    return rank


def order_layers(rank: dict[str, int], edges: Sequence[tuple[str, str]]) -> list[list[str]]:
    """Nodes grouped by rank, each rank ordered to reduce crossings (barycenter heuristic)."""
    layers: list[list[str]] = [[] for _ in range(max(rank.values(), default=-1) + 1)]
    for node in rank:  # dict order = discovery order, a reasonable start
        layers[rank[node]].append(node)
    neighbours: dict[str, list[str]] = {n: [] for n in rank}
    for src, dst in edges:
        neighbours[src].append(dst)
        neighbours[dst].append(src)
    for sweep in range(_SWEEPS):
        indices = range(1, len(layers)) if sweep % 2 == 0 else range(len(layers) - 2, -1, -1)
        for i in indices:
            fixed = i - 1 if sweep % 2 == 0 else i + 1
            pos = {n: j for j, n in enumerate(layers[fixed])}
            layers[i] = _by_barycenter(layers[i], neighbours, pos)
    return layers


def _by_barycenter(layer: list[str], neighbours: dict[str, list[str]], pos: dict[str, int]) -> list[str]:
    def key(item: tuple[int, str]) -> float:
        j, node = item
        near = [pos[n] for n in neighbours[node] if n in pos]
        return sum(near) / len(near) if near else float(j)

    return [node for _, node in sorted(enumerate(layer), key=key)]


def layered_layout(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, tuple[float, float]]:
    """``node -> (x, y)`` in grid units: y = rank (0 for sources), x centred within each rank."""
    rank = assign_ranks(nodes, edges)
    coords: dict[str, tuple[float, float]] = {}
    for depth, layer in enumerate(order_layers(rank, edges)):
        offset = (len(layer) - 1) / 2
        for j, node in enumerate(layer):
            coords[node] = (j - offset, float(depth))
    return coords
