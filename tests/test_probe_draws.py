"""A probe's random inputs must tell a plausible mistake from the answer for every salt, not for most: each
`labs grade` and `labs check` run draws them anew, so a mistake that matches by chance in one draw in 200
earns full marks in one grading run in 200 (`labs check` once failed so on lab 05)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from graders.coursedir import nbgrader_meta
from graders.grader.grading import Lab, load_lab
from graders.inside.probing import Draw, run_probe
from tests.conftest import ROOT
from tests.records import compare_wire

LAB_02 = ROOT / "course" / "02_tensors" / "lab_tensors.ipynb"
LAB_04 = ROOT / "course" / "04_distributed" / "lab_distributed.ipynb"
LAB_05 = ROOT / "course" / "05_deployment" / "lab_deployment.ipynb"


@pytest.fixture(scope="module")
def onnx_parity_probe():
    return load_lab(LAB_05).probes["test_onnx_parity"]


def test_onnx_parity_inputs_separate_counting_rows_from_averaging_batches(onnx_parity_probe) -> None:
    """A row changes class once exported when its first feature is positive (the probe's ``_ExportSkew``):
    the share of unchanged rows over all inputs must differ from the mean of the batches' shares (what
    ``onnx_parity__mean_of_batch_fractions.py`` returns) in every draw."""
    gaps = []
    for salt in range(100):
        seen: list[list[torch.Tensor]] = []

        def onnx_parity(model, inputs, path, seen=seen):
            seen.append([x.clone() for x in inputs])
            return 0.0, 0.0

        onnx_parity_probe.fn({"onnx_parity": onnx_parity}, Draw(salt, "test_onnx_parity"))
        batches = seen[0]  # the first call gets the probe's batches (the second, one mixed batch)
        agree = [(x[:, 0] <= 0).float() for x in batches]
        overall = float(torch.cat(agree).mean())
        batch_mean = sum(float(a.mean()) for a in agree) / len(agree)
        gaps.append(abs(overall - batch_mean))
    assert min(gaps) >= 0.01, f"salt {gaps.index(min(gaps))}: the two averages differ by only {min(gaps):.3f}"


def test_onnx_parity_inputs_separate_all_rows_from_the_example_batch(onnx_parity_probe) -> None:
    """``onnx_parity__first_input_only.py`` measures ``inputs[0]`` alone: the share of unchanged rows over all
    inputs must differ from the first batch's, and a row of the largest-scale batch must change class (its
    rolled logits then hold the maximum difference, far above the example batch's), in every draw."""
    for salt in range(100):
        seen: list[tuple[torch.nn.Module, list[torch.Tensor]]] = []

        def onnx_parity(model, inputs, path, seen=seen):
            seen.append((model, [x.clone() for x in inputs]))
            return 0.0, 0.0

        onnx_parity_probe.fn({"onnx_parity": onnx_parity}, Draw(salt, "test_onnx_parity"))
        model, batches = seen[0]
        agree = [(x[:, 0] <= 0).float() for x in batches]
        overall = float(torch.cat(agree).mean())
        assert abs(overall - float(agree[0].mean())) >= 0.01, (
            f"salt {salt}: all rows agree as often as the first batch"
        )
        with torch.no_grad():
            gaps = [_largest_change_once_exported(model.net(x), x) for x in batches]
        largest = max(range(len(batches)), key=lambda i: float(batches[i].abs().max()))
        assert gaps[largest] > 0, f"salt {salt}: no row of the largest-scale batch changes class"
        assert gaps[0] < 0.5 * max(gaps), f"salt {salt}: the example batch holds the largest difference"


def _largest_change_once_exported(logits: torch.Tensor, x: torch.Tensor) -> float:
    """The largest logit difference the rolled rows (first feature positive) get once exported."""
    rolled = (logits.roll(1, dims=1) - logits).abs().amax(dim=1)[x[:, 0] > 0]
    return float(rolled.max()) if len(rolled) else 0.0


def _solution(lab: Lab, grade_id: str, code: str | None = None) -> dict:
    """A namespace holding the lab's solution ``grade_id`` (the source's, or ``code``), with the imports
    plain-Python exercises use."""
    import math
    import statistics
    import time

    cell = next(c for c in lab.source.cells if nbgrader_meta(c).get("grade_id") == grade_id)
    ns: dict = {"math": math, "statistics": statistics, "time": time, "torch": torch}
    exec(compile(code if code is not None else cell.source, f"{lab.name}:{grade_id}", "exec"), ns)
    return ns


# (lab, probe, wrong solution file, how many of the probe's last cases are drawn to catch it in every draw)
ALWAYS_CAUGHT = [
    (LAB_02, "test_view_strides", "view_strides__size_one_breaks_chunks.py", 1),
    (LAB_02, "test_broadcast_shape", "broadcast_shape__compares_with_first.py", 1),
    (LAB_05, "test_bench_median_ms", "bench_median_ms__upper_median.py", 2),
    (LAB_05, "test_bench_median_ms", "bench_median_ms__mean.py", 2),
    (LAB_05, "test_bench_median_ms", "bench_median_ms__one_call_block.py", 2),
]


SALTS = 300


@pytest.mark.parametrize(
    ("path", "grade_id", "wrong", "fixed"), ALWAYS_CAUGHT, ids=[w for _, _, w, _ in ALWAYS_CAUGHT]
)
def test_fixed_cases_catch_the_mistake_for_every_salt(
    path: Path, grade_id: str, wrong: str, fixed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wrong solutions that pass the visible tests and were caught only by most draws: the probe's last
    ``fixed`` cases, there for them, must tell them from the source on every salt (each matched the
    answer in about one grading run in 10^4 to 10^7 before).

    The probe's Hypothesis examples (``graders.inside.draws.examples``) are left out: they come before the fixed
    cases, draw nothing from the salt's stream themselves, and cost most of a probe run (0.2 CPU-s for
    view_strides' 110 layouts). Without them the fixed cases are drawn from the same ranges, in
    milliseconds a salt."""
    lab = load_lab(path)
    probe = lab.probes[grade_id]
    solution = grade_id.removeprefix("test_")
    right = _solution(lab, solution)
    mistake = _solution(lab, solution, (ROOT / "tests" / "wrong_solutions" / lab.chapter / wrong).read_text())
    # neither solution breaks a rule; the rule windows cost 0.1 s per draw
    monkeypatch.setitem(probe.fn.__globals__, "forbidden", _records_nothing)
    if "examples" in probe.fn.__globals__:
        monkeypatch.setitem(probe.fn.__globals__, "examples", lambda draw, strategy, count: [])
    matched = []
    for salt in range(SALTS):
        want, got = run_probe(probe, right, salt), run_probe(probe, mistake, salt)
        assert "value" in want, f"salt {salt}: the probe failed on the source: {want}"
        tail = [
            {"value": result["value"][-fixed:]} if "value" in result else result for result in (got, want)
        ]
        if compare_wire(*tail, probe.rtol, probe.atol).ok:
            matched.append(salt)
    assert not matched, f"{wrong} matches the source's last {fixed} case(s) for salts {matched[:10]}"


@contextmanager
def _records_nothing(**rules: object) -> Iterator[SimpleNamespace]:
    """A stand-in for ``graders.inside.rules.forbidden`` that records nothing."""
    yield SimpleNamespace(violations=[], ops=[])


def test_ring_all_reduce_draws_both_dtypes_on_every_world(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ring_all_reduce__float32_buffers.py`` differs from the answer on float64 inputs only: every world
    size's cases must hold one (and one float32), whatever the draws."""
    probe = load_lab(LAB_04).probes["test_ring_all_reduce"]
    module = probe.fn.__globals__
    worlds: dict[int, list] = {}

    def on_every_world(ns, name, student_fn, cases_for):
        worlds.update({world: cases_for(world) for world in module["WORLDS"]})

    monkeypatch.setitem(module, "on_every_world", on_every_world)
    for salt in range(300):
        probe.fn({}, Draw(salt, probe.grade_id))
        for world, cases in worlds.items():
            dtypes = {dtype for _, dtype, *_ in cases}
            assert dtypes == {torch.float32, torch.float64}, f"salt {salt}, {world} ranks: only {dtypes}"
