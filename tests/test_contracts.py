"""Contracts every probe gets (graders.contracts): side effects recorded per call, compared with the reference's."""

from __future__ import annotations

import random

import torch

from graders.compare import compare
from graders.contracts import GLOBALS, Record, Watched
from graders.probing import Probe, run_probe


def _notebook(code: str) -> dict:
    ns: dict = {"__name__": "__main__", "torch": torch, "random": random}
    exec(compile(code, "<cell>", "exec"), ns)
    return ns


def _probe(ns: dict, draw) -> list:
    x = torch.arange(4.0)
    return [ns["scale"](x, 2.0), ns["scale"](x.clone(), 0.0, inplace=True)]


def _run(code: str) -> dict:
    return run_probe(Probe("test_scale", _probe), _notebook(code), salt=1)


REFERENCE = ("def scale(x, factor, inplace=False):\n"
             "    return x.mul_(factor) if inplace else x * factor\n")


def test_what_each_call_changed_is_recorded() -> None:
    result = _run(REFERENCE)
    assert result["contracts"]["effects"] == [[1, "scale", ["x: values"]]]
    assert result["contracts"]["calls"] == 2


def test_a_submission_that_mutates_what_the_reference_leaves_alone_differs() -> None:
    always_in_place = "def scale(x, factor, inplace=False):\n    return x.mul_(factor)\n"
    verdict = compare(_run(always_in_place), _run(REFERENCE))
    assert not verdict.ok and "call 0 of scale: changed ['x: values']" in verdict.detail


def test_in_place_stated_but_out_of_place_done_differs() -> None:
    never_in_place = "def scale(x, factor, inplace=False):\n    return x * factor\n"
    verdict = compare(_run(never_in_place), _run(REFERENCE))
    assert not verdict.ok and "changed nothing, the reference ['x: values']" in verdict.detail


def test_global_state_left_changed_differs() -> None:
    leaves_grad_off = ("def scale(x, factor, inplace=False):\n    torch.set_grad_enabled(False)\n"
                       "    return x.mul_(factor) if inplace else x * factor\n")
    reseeds = ("def scale(x, factor, inplace=False):\n    torch.manual_seed(0)\n"
               "    return x.mul_(factor) if inplace else x * factor\n")
    restores = ("def scale(x, factor, inplace=False):\n    with torch.no_grad():\n        y = x * factor\n"
                "    return x.mul_(factor) if inplace else x * factor\n")
    try:
        assert "grad mode left changed" in compare(_run(leaves_grad_off), _run(REFERENCE)).detail
    finally:
        torch.set_grad_enabled(True)
    assert "random generators left changed" in compare(_run(reseeds), _run(REFERENCE)).detail
    assert compare(_run(restores), _run(REFERENCE)).ok


def test_coverage_names_parameters_never_varied() -> None:
    record = Record()
    ns = Watched(_notebook("def f(x, eps=1e-6, strict=True, out=None):\n    return x\n"), record)
    ns["f"](1.0, eps=0.5)
    ns["f"](1.0, 1e-6, False)
    assert record.plain()["varied"] == {"f(eps)": ["non-default"], "f(out)": [], "f(strict)": ["falsy", "non-default"]}


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

    ns = _notebook("import numpy\n\ndef draws(restore):\n    state = numpy.random.get_state()\n"
                   "    numpy.random.random()\n    if restore:\n        numpy.random.set_state(state)\n")
    numpy.random.seed(0)
    numpy.random.random()  # the key is refilled here; the draws below only move the position
    record = Record()
    Watched(ns, record)["draws"](True)
    Watched(ns, record)["draws"](False)
    assert record.plain()["effects"] == [[1, "draws", ["random generators left changed"]]]


def test_every_global_a_call_may_leave_changed_is_seen() -> None:
    """Each global of graders.contracts.GLOBALS that a call changes and does not restore is recorded by name."""
    cases = {  # what: (the change, its undo)
        "default device": ("torch.set_default_device('meta')", "torch.set_default_device(None)"),
        "float32 matmul precision": ("torch.set_float32_matmul_precision('medium')",
                                     "torch.set_float32_matmul_precision('highest')"),
        "deterministic algorithms": ("torch.use_deterministic_algorithms(True, warn_only=True)",
                                     "torch.use_deterministic_algorithms(False)"),
        "cudnn flags": ("torch.backends.cudnn.benchmark = True", "torch.backends.cudnn.benchmark = False"),
        "cpu autocast": ("torch.set_autocast_dtype('cpu', torch.float16)",
                         "torch.set_autocast_dtype('cpu', torch.bfloat16)"),
        "anomaly mode": ("torch.set_anomaly_enabled(False, check_nan=False)", "torch.set_anomaly_enabled(False)"),
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
