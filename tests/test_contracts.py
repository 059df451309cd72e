"""Contracts every probe gets (graders.inside.contracts): side effects recorded per call, compared with the reference's."""

from __future__ import annotations

import random

import torch

from graders.inside.contracts import GLOBALS, Record, Watched
from graders.inside.probing import Probe, run_probe
from tests.records import compare_wire


def _notebook(code: str) -> dict:
    ns: dict = {"__name__": "__main__", "torch": torch, "random": random}
    exec(compile(code, "<cell>", "exec"), ns)
    return ns


def _probe(ns: dict, draw) -> list:
    x = torch.arange(4.0)
    return [ns["scale"](x, 2.0), ns["scale"](x.clone(), 0.0, inplace=True)]


def _run(code: str) -> dict:
    return run_probe(Probe("test_scale", _probe), _notebook(code), salt=1)


REFERENCE = "def scale(x, factor, inplace=False):\n    return x.mul_(factor) if inplace else x * factor\n"


def test_what_each_call_changed_is_recorded() -> None:
    result = _run(REFERENCE)
    assert result["contracts"]["effects"] == [[1, "scale", ["x: values"]]]
    assert result["contracts"]["calls"] == 2


def test_a_submission_that_mutates_what_the_reference_leaves_alone_differs() -> None:
    always_in_place = "def scale(x, factor, inplace=False):\n    return x.mul_(factor)\n"
    verdict = compare_wire(_run(always_in_place), _run(REFERENCE))
    assert not verdict.ok and "call 0 of scale: changed ['x: values']" in verdict.detail


def test_in_place_stated_but_out_of_place_done_differs() -> None:
    never_in_place = "def scale(x, factor, inplace=False):\n    return x * factor\n"
    verdict = compare_wire(_run(never_in_place), _run(REFERENCE))
    assert not verdict.ok and "changed nothing, the reference ['x: values']" in verdict.detail


def test_global_state_left_changed_differs() -> None:
    leaves_grad_off = (
        "def scale(x, factor, inplace=False):\n    torch.set_grad_enabled(False)\n"
        "    return x.mul_(factor) if inplace else x * factor\n"
    )
    reseeds = (
        "def scale(x, factor, inplace=False):\n    torch.manual_seed(0)\n"
        "    return x.mul_(factor) if inplace else x * factor\n"
    )
    restores = (
        "def scale(x, factor, inplace=False):\n    with torch.no_grad():\n        y = x * factor\n"
        "    return x.mul_(factor) if inplace else x * factor\n"
    )
    try:
        assert "grad mode left changed" in compare_wire(_run(leaves_grad_off), _run(REFERENCE)).detail
    finally:
        torch.set_grad_enabled(True)
    assert "random generators left changed" in compare_wire(_run(reseeds), _run(REFERENCE)).detail
    assert compare_wire(_run(restores), _run(REFERENCE)).ok


def test_coverage_names_parameters_never_varied() -> None:
    record = Record()
    ns = Watched(_notebook("def f(x, eps=1e-6, strict=True, out=None):\n    return x\n"), record)
    ns["f"](1.0, eps=0.5)
    ns["f"](1.0, 1e-6, False)
    assert record.plain()["varied"] == {
        "f(eps)": ["non-default"],
        "f(out)": [],
        "f(strict)": ["falsy", "non-default"],
    }


def test_only_the_notebooks_functions_are_watched() -> None:
    ns = Watched({"f": torch.sum, "g": _notebook("def g():\n    return 1\n")["g"]}, Record())
    assert ns["f"] is torch.sum and ns["g"] is not ns.ns["g"]
    assert ns["g"]() == 1 and ns.record.calls == 1
    ns["h"] = 2  # what a probe writes reaches the notebook
    assert ns.ns["h"] == 2


def test_one_numpy_draw_moves_the_generator_and_is_recorded() -> None:
    """NumPy's legacy generator refills its key once per 624 draws and moves only its position in between:
    the record reads both, so a draw between two refills is seen too."""
    import numpy

    ns = _notebook(
        "import numpy\n\ndef draws(restore):\n    state = numpy.random.get_state()\n"
        "    numpy.random.random()\n    if restore:\n        numpy.random.set_state(state)\n"
    )
    numpy.random.seed(0)
    numpy.random.random()  # the key is refilled here; the draws below only move the position
    record = Record()
    Watched(ns, record)["draws"](True)
    Watched(ns, record)["draws"](False)
    assert record.plain()["effects"] == [[1, "draws", ["random generators left changed"]]]


def test_every_global_a_call_may_leave_changed_is_seen() -> None:
    """Each global of graders.inside.contracts.GLOBALS that a call changes and does not restore is recorded by name."""
    cases = {  # what: (the change, its undo)
        "default device": ("torch.set_default_device('meta')", "torch.set_default_device(None)"),
        "float32 matmul precision": (
            "torch.set_float32_matmul_precision('medium')",
            "torch.set_float32_matmul_precision('highest')",
        ),
        "deterministic algorithms": (
            "torch.use_deterministic_algorithms(True, warn_only=True)",
            "torch.use_deterministic_algorithms(False)",
        ),
        "cudnn flags": ("torch.backends.cudnn.benchmark = True", "torch.backends.cudnn.benchmark = False"),
        "cpu autocast": (
            "torch.set_autocast_dtype('cpu', torch.float16)",
            "torch.set_autocast_dtype('cpu', torch.bfloat16)",
        ),
        "anomaly mode": (
            "torch.set_anomaly_enabled(False, check_nan=False)",
            "torch.set_anomaly_enabled(False)",
        ),
        "default dtype": ("torch.set_default_dtype(torch.float64)", "torch.set_default_dtype(torch.float32)"),
    }
    before = {name: read() for name, read in GLOBALS.items() if name != "random generators"}
    for what, (change, undo) in cases.items():
        ns = _notebook(f"def f():\n    {change}\n\ndef undo():\n    {undo}\n")
        record = Record()
        try:
            Watched(ns, record)["f"]()
        finally:
            ns["undo"]()
        assert record.plain()["effects"] == [[0, "f", [f"{what} left changed"]]], what
        assert {name: read() for name, read in GLOBALS.items() if name != "random generators"} == before, what


def _effects(code: str, probe) -> list:
    return run_probe(Probe("test_x", probe), _notebook(code), salt=1)["contracts"]["effects"]


def test_tensors_inside_a_list_or_dict_are_watched() -> None:
    def probe(ns: dict, draw) -> list:
        batches = [torch.ones(2), torch.ones(3)]
        named = {"a": torch.ones(2)}
        return [ns["total"](batches), ns["first"](named), ns["total"](batches)]

    honest = "def total(xs):\n    return sum(x.sum() for x in xs)\n\ndef first(d):\n    return d['a'] * 2\n"
    sloppy = (
        "def total(xs):\n    xs[1].mul_(2)\n    return sum(x.sum() for x in xs)\n\n"
        "def first(d):\n    return d['a'].add_(1)\n"
    )
    assert _effects(honest, probe) == []
    assert _effects(sloppy, probe) == [
        [0, "total", ["xs: item 1: values"]],
        [1, "first", ["d: item a: values"]],
        [2, "total", ["xs: item 1: values"]],
    ]


def test_a_modules_mode_parameters_grads_identity_and_buffers_are_watched() -> None:
    def probe(ns: dict, draw) -> list:
        out = []
        for name in ("honest", "eval_left", "grad_set", "swapped", "stats"):
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2)).train()
            out.append(ns[name](model, torch.ones(3, 2)))
        return out

    code = (
        "def honest(m, x):\n    with torch.no_grad():\n        return m[0](x)\n\n"
        "def eval_left(m, x):\n    m.eval()\n    return m[0](x)\n\n"
        "def grad_set(m, x):\n    m[0](x).sum().backward()\n    return x\n\n"
        "def swapped(m, x):\n    m[0].bias = torch.nn.Parameter(m[0].bias.detach().clone())\n    return x\n\n"
        "def stats(m, x):\n    with torch.no_grad():\n        return m(x)\n"
    )
    assert _effects(code, probe) == [
        [1, "eval_left", ["m: train/eval mode"]],
        [2, "grad_set", ["m: parameters' .grad"]],
        [3, "swapped", ["m: which parameter objects"]],
        [4, "stats", ["m: buffers"]],
    ]
