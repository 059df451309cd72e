"""The probes' structured draws cover the shapes of their input space, not one family: checked on the
draws themselves (no sandbox, no student code), for several salts."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import torch

from graders.inside.probing import Draw

ROOT = Path(__file__).resolve().parent.parent


def probes(chapter: str, lab: str) -> ModuleType:
    """A lab's probe file, imported as a module."""
    spec = importlib.util.spec_from_file_location(
        f"probes_{lab}", ROOT / "course" / chapter / "probes" / f"{lab}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def consumers(output: torch.Tensor) -> dict:
    """Each node reachable from output.grad_fn -> how many edges reach it."""
    counts, todo, seen = {output.grad_fn: 0}, [output.grad_fn], {output.grad_fn}
    while todo:
        for nxt, _ in todo.pop().next_functions:
            if nxt is not None:
                counts[nxt] = counts.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
    return counts


def many_orders(output: torch.Tensor) -> bool:
    """Whether the graph has more than one valid backward order (Kahn's queue ever holds two nodes)."""
    pending, queue = consumers(output), [output.grad_fn]
    while queue:
        if len(queue) > 1:
            return True
        for nxt, _ in queue.pop().next_functions:
            if nxt is not None:
                pending[nxt] -= 1
                if pending[nxt] == 0:
                    queue.append(nxt)
    return False


@pytest.mark.parametrize("salt", [1, 2, 3])
def test_backward_order_graphs_have_every_shape(salt: int) -> None:
    lab = probes("01_autograd", "lab_autograd")
    draw = Draw(salt, "test_backward_order")
    graphs = [lab._dag(draw, spec) for spec in lab.examples(draw, lab.GRAPHS, 40)]
    leaves = [sum(type(n).__name__ == "AccumulateGrad" for n in consumers(g)) for g in graphs]
    assert min(leaves) == 1 and max(leaves) >= 2
    assert any(max(consumers(g).values()) >= 2 for g in graphs)  # a node consumed twice
    assert sum(many_orders(g) for g in graphs) >= 10
    assert any(not many_orders(g) for g in graphs)  # the one-order boundary too


@pytest.mark.parametrize("salt", [1, 2, 3])
def test_nan_node_faults_put_an_inf_before_a_nan_and_alone(salt: int) -> None:
    lab = probes("01_autograd", "lab_autograd")
    drawn = lab._fault_lists(Draw(salt, "test_nan_node"))

    def kinds(terms: list[str]) -> list[str]:  # in the order backward meets them: the last term first
        return [name.split("_")[-1] for name in reversed(terms)]

    def inf_first(terms: list[str]) -> bool:
        met = [k for k in kinds(terms) if k != "finite"]
        return "nan" in met and met.index("inf") < met.index("nan") if "inf" in met else False

    assert any(inf_first(terms) for terms in drawn)
    assert any("inf" in kinds(terms) and "nan" not in kinds(terms) for terms in drawn)
    assert any(kinds(terms).count("nan") >= 2 for terms in drawn)
    assert len({tuple(terms) for terms in drawn}) >= 12  # the draws add lists of their own


def _big_dims(layout: tuple) -> list[tuple[int, int]]:
    return [(n, s) for n, s in zip(*layout, strict=True) if n > 1]


@pytest.mark.parametrize("salt", [1, 2, 3])
def test_view_strides_layouts_combine_kinds(salt: int) -> None:
    """Layouts come from chains of views: kinds appear together in one layout, and the boundaries too."""
    lab = probes("02_tensors", "lab_tensors")
    draw = Draw(salt, "test_view_strides")
    drawn = [lab._layout(spec) for spec in lab.examples(draw, lab.LAYOUTS, 110)]
    layouts = drawn + [lab._layout(lab._paired(draw, kinds)) for kinds in lab.PAIRED_VIEWS for _ in range(5)]

    def expanded(layout: tuple) -> bool:
        return any(s == 0 for _, s in _big_dims(layout))

    def permuted(layout: tuple) -> bool:
        strides = [s for _, s in _big_dims(layout) if s]
        return strides != sorted(strides, reverse=True)

    def gapped(layout: tuple) -> bool:  # not expanded, yet the elements do not tile one block
        span = sum((n - 1) * s for n, s in _big_dims(layout)) + 1
        return not expanded(layout) and span > torch.Size(layout[0]).numel()

    assert any(expanded(lay) and permuted(lay) for lay in layouts)
    assert any(gapped(lay) and permuted(lay) for lay in layouts)
    assert any(
        n == 1 and s > 1 for lay in layouts for n, s in zip(*lay, strict=True)
    )  # a size-1 dim's odd stride
    assert any(lay == ((), ()) for lay in layouts)
    assert len(set(drawn)) >= 70 and sum(permuted(lay) or expanded(lay) or gapped(lay) for lay in drawn) >= 25
