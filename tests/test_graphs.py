"""labutils.graphs: the drawn structure is checked against the real autograd graph."""

from __future__ import annotations

import re
import sys
from collections import Counter

import pytest
import torch
from torch import nn

from labutils.graphs import build_graph, compat, draw_graph, record_modules, with_highlight
from labutils.graphs.collapse import module_group
from labutils.graphs.layout import assign_ranks, layered_layout
from labutils.graphs.structure import LEAF, OP, OUTPUT, PARAM, SAVED


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def reference_nodes(output: torch.Tensor) -> dict[int, object]:
    """Every autograd Node reachable from ``output.grad_fn``: an independent walk."""
    found, todo = {id(output.grad_fn): output.grad_fn}, [output.grad_fn]
    while todo:
        for nxt, _ in todo.pop().next_functions:
            if nxt is not None and id(nxt) not in found:
                found[id(nxt)] = nxt
                todo.append(nxt)
    return found


def reference_edges(output: torch.Tensor) -> Counter:
    """``(id(node), id(next))`` for every entry of every node's ``next_functions``."""
    return Counter(
        (id(fn), id(nxt))
        for fn in reference_nodes(output).values()
        for nxt, _ in fn.next_functions
        if nxt is not None
    )


def small_graph() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    a, b, c = (torch.randn(3, requires_grad=True) for _ in range(3))
    out = ((a * b).sin() + c.exp() * b).sum()
    return out, {"a": a, "b": b, "c": c}


def drawn_edge_ids(graph) -> Counter:
    return Counter(
        (id(graph.nodes[e.src].fn), id(graph.nodes[e.dst].fn))
        for e in graph.grad_edges()
        if graph.nodes[e.src].kind != OUTPUT
    )


# --- structure against autograd ---------------------------------------------------------------


def test_nodes_and_edges_match_next_functions() -> None:
    out, params = small_graph()
    graph = build_graph(out, params)
    assert {id(n.fn) for n in graph.autograd_nodes()} == set(reference_nodes(out))
    assert drawn_edge_ids(graph) == reference_edges(out)
    assert [graph.nodes[e.dst].fn for e in graph.grad_edges() if e.src in graph.outputs] == [out.grad_fn]


def test_repeated_input_gives_two_edges() -> None:
    x = torch.randn(4, requires_grad=True)
    graph = build_graph((x * x).sum(), {"x": x})
    mul = next(n for n in graph.nodes.values() if n.title == "MulBackward0")
    leaf = next(n for n in graph.nodes.values() if n.kind == PARAM)
    assert sum(1 for e in graph.grad_edges() if (e.src, e.dst) == (mul.id, leaf.id)) == 2


@pytest.mark.filterwarnings("ignore:distutils Version classes:DeprecationWarning")  # inside torchviz
def test_same_node_set_as_torchviz() -> None:
    tv = compat.torchviz_dot()
    if tv is None:
        pytest.skip("torchviz not importable here")
    out, params = small_graph()
    dot = tv.make_dot(out, params=params)
    names = {m.group(1) for line in dot.body if (m := re.match(r"\s*(\d+) \[label", line))}
    ours = {str(id(n.fn)) for n in build_graph(out, params).autograd_nodes()}
    leaf_vars = {str(id(t)) for t in params.values()} | {str(id(out))}
    assert ours == names - leaf_vars


def test_leaves_params_and_grads_after_backward() -> None:
    out, params = small_graph()
    before = build_graph(out, params)
    assert {n.title for n in before.nodes.values() if n.kind == PARAM} == set(params)
    assert all("grad None" in n.lines for n in before.nodes.values() if n.kind == PARAM)
    out.backward()
    after = build_graph(out, params)
    for node in after.nodes.values():
        if node.kind == PARAM:
            expected = "grad [" + ", ".join(f"{v:.3g}" for v in params[node.title].grad.tolist()) + "]"
            assert expected in node.lines, (node.title, node.lines)


def test_unnamed_leaf_and_module_params() -> None:
    model = nn.Linear(3, 2)
    x = torch.randn(5, 3, requires_grad=True)
    graph = build_graph(model(x).sum(), model)
    kinds = Counter(n.kind for n in graph.nodes.values())
    assert kinds[PARAM] == 2 and kinds[LEAF] == 1
    assert {n.title for n in graph.nodes.values() if n.kind == PARAM} == {"weight", "bias"}


def test_saved_tensors_match_saved_tensors_hooks() -> None:
    packed: list[int] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        packed.append(t.numel() * t.element_size())
        return t

    x = torch.randn(8, 5, requires_grad=True, dtype=torch.float64)
    w = torch.randn(5, 3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = ((x.float() @ w).relu() * torch.full((3,), 2.0)).exp().sum()
    graph = build_graph(out)
    saved = [s for n in graph.nodes.values() for s in n.saved]
    assert sorted(s.nbytes for s in saved) == sorted(packed)
    mm = next(n for n in graph.nodes.values() if n.title == "MmBackward0")
    assert {(s.name, s.shape) for s in mm.saved} == {("self", (8, 5)), ("mat2", (5, 3))}
    exp = next(n for n in graph.nodes.values() if n.title == "ExpBackward0")
    assert [(s.name, s.dtype, s.nbytes) for s in exp.saved] == [("result", "float32", 8 * 3 * 4)]


def test_saved_boxes_are_drawn_with_shape_and_bytes() -> None:
    a = torch.randn(4, 6, requires_grad=True)
    drawing = draw_graph(a.exp().sum(), renderer="matplotlib")
    saved = [n for n in drawing.drawn.nodes.values() if n.kind == SAVED]
    assert [(n.title, n.lines) for n in saved] == [("result", ["(4, 6) float32", "96 B"])]
    hidden = draw_graph(a.exp().sum(), show_saved=False, renderer="matplotlib")
    assert not any(n.kind == SAVED for n in hidden.drawn.nodes.values())
    assert any("saved 1: 96 B" in n.lines for n in hidden.drawn.nodes.values())


def test_saved_tensors_freed_after_backward_unless_retained() -> None:
    out, _ = small_graph()
    out.backward(retain_graph=True)
    assert all(n.saved_problem is None for n in build_graph(out).nodes.values())
    out.backward()
    freed = {n.title for n in build_graph(out).nodes.values() if n.saved_problem == "freed"}
    assert freed == {"MulBackward0", "SinBackward0", "ExpBackward0"}


def test_custom_function_saved_tensors() -> None:
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.randn(7, requires_grad=True)
    graph = build_graph(Square.apply(x).sum())
    node = next(n for n in graph.nodes.values() if n.title == "SquareBackward")
    assert [(s.name, s.shape, s.nbytes) for s in node.saved] == [("saved[0]", (7,), 28)]


def test_outputs_dict_shares_subgraph() -> None:
    x = torch.randn(3, requires_grad=True)
    h = x.sin()
    graph = build_graph({"loss": h.sum(), "h": h})
    assert [graph.nodes[o].title for o in graph.outputs] == ["loss", "h"]
    assert sum(1 for n in graph.nodes.values() if n.title == "SinBackward0") == 1


def test_output_without_graph_is_explained() -> None:
    with torch.no_grad():
        y = torch.randn(3, requires_grad=True) * 2
    with pytest.raises(ValueError, match="does not require grad"):
        build_graph(y)


def test_leaf_output_draws_its_accumulator() -> None:
    x = torch.randn(2, requires_grad=True)
    graph = build_graph(x)
    assert [n.kind for n in graph.nodes.values()] == [OUTPUT, LEAF]


# --- gradient path ----------------------------------------------------------------------------


def test_highlight_matches_nodes_the_engine_runs() -> None:
    out, params = small_graph()
    graph = build_graph(out, params)
    for name, tensor in params.items():
        ran: set[str] = set()
        handles = [
            n.fn.register_prehook(lambda g, i=n.id, seen=ran: seen.add(i)) for n in graph.autograd_nodes()
        ]
        out.backward(inputs=[tensor], retain_graph=True)
        for handle in handles:
            handle.remove()
        lit = with_highlight(graph, name)
        assert lit.highlight_nodes - set(graph.outputs) == ran, name
        path = lit.highlight_path
        assert path[0] in graph.outputs and graph.nodes[path[-1]].tensor is tensor
        edges = {(e.src, e.dst) for e in graph.grad_edges()}
        assert all(
            (u, v) in edges and (u, v) in lit.highlight_edges for u, v in zip(path, path[1:], strict=False)
        )


def test_highlight_by_tensor_op_and_unreachable() -> None:
    x = torch.randn(3, requires_grad=True)
    h = x.exp()
    out = (h * 2).sum()
    lit = with_highlight(build_graph(out), h)  # a non-leaf: the path ends at its grad_fn
    assert lit.nodes[lit.highlight_path[-1]].fn is h.grad_fn
    with pytest.raises(ValueError, match="no gradient"):
        with_highlight(build_graph(out), torch.randn(3, requires_grad=True))
    with pytest.raises(ValueError, match="no gradient"):
        with_highlight(build_graph(out), x.detach())


def test_highlight_survives_collapse() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
    with record_modules(model) as rec:
        out = model(torch.randn(3, 4)).sum()
    drawing = draw_graph(out, model, modules=rec, collapse=1, highlight="0.weight")
    assert drawing.drawn.highlight_path == ["t0", "n0", "m:2", "m:1", "m:0"]
    assert set(drawing.drawn.highlight_nodes) == {"t0", "n0", "m:2", "m:1", "m:0"}


# --- modules and collapsing -------------------------------------------------------------------


def test_each_module_output_is_created_inside_that_module() -> None:
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    outputs: dict[str, object] = {}

    def keep(name: str):
        def hook(module, args, output) -> None:
            outputs.setdefault(name, (args, output))

        return hook

    hooks = [m.register_forward_hook(keep(n)) for n, m in model.named_modules()]
    with record_modules(model) as rec:
        out = model(torch.randn(2, 3, 8)).sum()
    for hook in hooks:
        hook.remove()
    returned_by: dict[object, list[str]] = {}  # grad_fn of a module's output -> modules returning it
    for name, (args, value) in outputs.items():
        tensor = value[0] if isinstance(value, tuple) else value
        made_here = (
            isinstance(tensor, torch.Tensor)
            and tensor.grad_fn is not None
            and all(tensor.grad_fn is not getattr(a, "grad_fn", None) for a in args)
        )  # not an identity module
        if name and made_here:
            returned_by.setdefault(tensor.grad_fn, []).append(name)
    checked = 0
    for fn, names in returned_by.items():
        stack = rec.stack_of_node(fn)
        assert stack[-1] == max(names, key=len) and set(names) <= set(stack), (stack, names)
        checked += 1
    assert checked >= 10
    graph = build_graph(out, modules=rec)
    for node in graph.autograd_nodes():  # stacks are nested module names
        stack = node.module_stack
        assert all(inner.startswith(outer + ".") for outer, inner in zip(stack, stack[1:], strict=False))


def test_sequential_ops_land_in_their_module() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with record_modules(model) as rec:
        out = model(torch.randn(5, 3)).pow(2).sum()
    graph = build_graph(out, model, modules=rec)
    by_module = Counter(
        (n.module_stack[-1] if n.module_stack else "", n.title) for n in graph.autograd_nodes()
    )
    assert by_module[("0", "AddmmBackward0")] == 1 and by_module[("0", "TBackward0")] == 1
    assert by_module[("1", "ReluBackward0")] == 1
    assert by_module[("2", "AddmmBackward0")] == 1
    assert by_module[("", "PowBackward0")] == 1 and by_module[("", "SumBackward0")] == 1
    assert by_module[("0", "0.weight")] == 1 and by_module[("2", "2.bias")] == 1


def test_collapse_partitions_nodes_and_keeps_cross_edges() -> None:
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
    with record_modules(model) as rec:
        out = model(torch.randn(2, 3, 8)).pow(2).mean()
    drawing = draw_graph(out, model, modules=rec, collapse=1, renderer="matplotlib")
    full, drawn = drawing.graph, drawing.drawn
    group = {m: g.id for g in drawn.nodes.values() for m in g.members}
    assert {g.title for g in drawn.nodes.values() if g.members} == {
        f"layers.{i} (TransformerEncoderLayer)" for i in range(3)
    }
    in_modules = {n.id for n in full.autograd_nodes() if n.module_stack}
    assert set(group) == in_modules  # every node made inside a module is in exactly one box
    expected = {(group.get(e.src, e.src), group.get(e.dst, e.dst)) for e in full.grad_edges()}
    expected = {(s, d) for s, d in expected if s != d}
    assert {(e.src, e.dst) for e in drawn.grad_edges()} == expected
    assert len(drawn.autograd_nodes()) + len(group) == len(full.autograd_nodes())


def test_expand_opens_a_module() -> None:
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    with record_modules(model) as rec:
        out = model(torch.randn(2, 3, 8)).sum()
    drawn = draw_graph(out, modules=rec, collapse=1, expand=["layers.1"]).drawn
    titles = {n.title.split(" ")[0] for n in drawn.nodes.values() if n.members}
    assert "layers.0" in titles and "layers.1" not in titles
    assert {"layers.1.self_attn", "layers.1.linear1", "layers.1.norm2"} <= titles
    assert module_group(("a", "a.b", "a.b.c"), 1, {"a", "a.b"}) == "a.b.c"
    assert module_group(("a",), 2, ()) is None


def test_collapse_without_recording_is_explained() -> None:
    out, _ = small_graph()
    with pytest.raises(ValueError, match="record_modules"):
        draw_graph(out, collapse=1)


def test_auto_collapse_fits_max_nodes() -> None:
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
    with record_modules(model) as rec:
        out = model(torch.randn(2, 3, 8)).sum()
    drawing = draw_graph(out, modules=rec, max_nodes=120, renderer="matplotlib")
    boxes = len(drawing.drawn.nodes)
    assert boxes <= 120 and any("collapsed by module" in note for note in drawing.notes)


# --- big graphs -------------------------------------------------------------------------------


def test_20000_op_chain_without_recursion_error() -> None:
    x = torch.randn(2, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y * 1.0001
    drawing = draw_graph(y, {"x": x}, highlight="x", renderer="matplotlib")
    assert len(drawing.graph.autograd_nodes()) == 20_001
    assert len(drawing.graph.grad_edges()) == 20_001  # 20,000 ops + the output's edge
    assert len(drawing.graph.highlight_path) == 20_002
    chain = next(n for n in drawing.drawn.nodes.values() if n.kind == "chain")
    assert len(chain.members) == 20_000 and "MulBackward0 x20,000" in chain.lines
    assert [n.kind for n in drawing.drawn.nodes.values()] == [OUTPUT, "chain", PARAM]
    assert "<svg" in drawing.svg()


def test_short_graphs_are_not_compressed() -> None:
    x = torch.randn(2, requires_grad=True)
    y = x
    for _ in range(10):
        y = y.sin()
    drawn = draw_graph(y, renderer="matplotlib").drawn
    assert sum(n.kind == OP for n in drawn.nodes.values()) == 10


# --- rendering --------------------------------------------------------------------------------


def _titles_in(svg: str, drawing) -> bool:
    return all(n.title.split("\n")[0] in svg for n in drawing.drawn.nodes.values())


def test_graphviz_renderer_svg_png_dot(tmp_path) -> None:
    if not compat_dot():
        pytest.skip("graphviz dot binary not installed")
    out, params = small_graph()
    drawing = draw_graph(out, params, highlight="a")
    assert drawing.renderer == "graphviz"
    svg = drawing._repr_svg_()
    assert svg.lstrip().startswith("<?xml") and _titles_in(svg, drawing)
    assert drawing.save(tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"
    source = drawing.save(tmp_path / "g.dot").read_text()
    assert source.count("->") == len(drawing.drawn.edges)
    assert source.count("color=red") == len(drawing.drawn.highlight_nodes) + len(
        drawing.drawn.highlight_edges
    )


def compat_dot() -> bool:
    from labutils.graphs.render_graphviz import dot_available

    return dot_available()


def test_fallback_without_dot_binary(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere
    out, params = small_graph()
    drawing = draw_graph(out, params)
    assert drawing.renderer == "matplotlib"
    svg = drawing.svg()
    assert "<svg" in svg and _titles_in(svg, drawing)
    assert drawing.save(tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"
    assert "n0" in drawing.source  # the dot source needs no binary


def test_forced_graphviz_falls_back_when_dot_fails(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    out, _ = small_graph()
    drawing = draw_graph(out, renderer="graphviz")
    assert "<svg" in drawing.svg()
    assert drawing.renderer == "matplotlib" and any("graphviz failed" in n for n in drawing.notes)


def test_display_format_png() -> None:
    out, _ = small_graph()
    drawing = draw_graph(out, renderer="matplotlib", fmt="png")
    assert drawing._repr_svg_() is None and drawing._repr_png_()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="cannot save"):
        drawing.save("graph.txt")


def test_torchviz_import_without_distutils(monkeypatch) -> None:
    x = torch.randn(3, 4, requires_grad=True)
    out = x.sum(dim=1).prod()
    with_torchviz = build_graph(out, show_attrs=True)
    for name in [m for m in sys.modules if m == "torchviz" or m.startswith("torchviz.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "distutils", None)  # what Python 3.12 looks like
    monkeypatch.setitem(sys.modules, "distutils.version", None)
    compat.torchviz_dot.cache_clear()
    try:
        assert compat.torchviz_dot() is None
        without = build_graph(out, show_attrs=True)
        assert [n.lines for n in without.nodes.values()] == [n.lines for n in with_torchviz.nodes.values()]
        assert any(
            re.fullmatch(r"dim\s*:\s*\(1,\)", line) for n in without.nodes.values() for line in n.lines
        )
        assert "<svg" in draw_graph(out, show_attrs=True, renderer="matplotlib").svg()
    finally:
        compat.torchviz_dot.cache_clear()


# --- layout -----------------------------------------------------------------------------------


def test_layered_layout_ranks_follow_edges() -> None:
    edges = [("o", "a"), ("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("o", "d")]
    rank = assign_ranks(["o", "a", "b", "c", "d"], edges)
    assert all(rank[d] > rank[s] for s, d in edges)
    coords = layered_layout(["o", "a", "b", "c", "d"], edges)
    assert len(set(coords.values())) == 5
    cyclic = assign_ranks(["x", "y"], [("x", "y"), ("y", "x")])  # a module called twice
    assert sorted(cyclic.values()) == [0, 1]
