"""Partial credit: declared per probe, proportional to matched cases, rounded down, never full when a case differs."""

import nbformat
import pytest

from graders.boundary.protocol import UNPLAIN
from graders.grader.compare import Verdict, points_for
from graders.inside.probing import probe
from tests.records import compare_wire


def test_all_or_nothing_by_default():
    verdict = compare_wire({"value": [1, 2, 3, 9]}, {"value": [1, 2, 3, 4]})
    assert (verdict.differing, verdict.cases) == (1, 4)
    assert points_for(verdict, 5, None) == 0.0
    assert points_for(compare_wire({"value": [1, 2]}, {"value": [1, 2]}), 5, None) == 5


def test_proportional_and_rounded_down_to_the_step():
    assert points_for(Verdict(False, 23, 60), 5, 1) == 3.0  # 37/60 of 5 = 3.08
    assert points_for(Verdict(False, 23, 60), 5, 0.5) == 3.0
    assert points_for(Verdict(False, 10, 60), 5, 0.5) == 4.0  # 50/60 of 5 = 4.17
    assert points_for(Verdict(False, 60, 60), 5, 1) == 0.0
    for differing in range(1, 100):
        assert points_for(Verdict(False, differing, 100), 6, 0.25) < 6, differing


def test_a_single_observation_or_a_raise_earns_nothing_partial():
    assert points_for(compare_wire({"value": 3}, {"value": 4}), 5, 1) == 0.0
    assert points_for(compare_wire({"error": "ValueError: x"}, {"value": [1, 2]}), 5, 1) == 0.0


def test_partial_step_must_be_positive():
    with pytest.raises(ValueError, match="partial_step must be positive"):
        probe("test_x", partial_step=0)


def test_a_reference_the_grader_cannot_compare_is_a_broken_probe():
    # A probe returning an nn.Module: both sides would become the same marker and "match".
    marker = {UNPLAIN: "Linear"}
    verdict = compare_wire({"value": [1, marker]}, {"value": [1, marker]})
    assert not verdict.ok and "cannot compare (Linear): a broken probe" in verdict.why


def test_first_difference_names_the_case_the_key_path_and_both_values():
    import torch

    from graders.grader.compare import first_difference

    want = [{"grads": [torch.zeros(2), torch.tensor([1.0, 2.0, 3.0])]}, {"grads": [1]}]
    got = [{"grads": [torch.zeros(2), torch.tensor([1.0, 2.5, 3.0])]}, {"grads": [1]}]
    assert (
        first_difference(got, want)
        == '[0]["grads"][1]: expected tensor(3, float32, [1] = 2.0), got tensor(3, float32, [1] = 2.5)'
    )
    assert first_difference(want, want) is None
    assert (
        first_difference(torch.zeros(2, 3), torch.zeros(3, 2))
        == "expected tensor(3x2, float32), got tensor(2x3, float32)"
    )
    assert first_difference([1], [1, 2]) == "expected 2 items, got 1"
    assert first_difference({"a": 1}, {"b": 1}) == "expected keys ['b'], got ['a']"
    assert first_difference("x" * 200, 1.0).startswith("expected float 1.0, got str 'xxx")
    assert len(first_difference("x" * 200, "y")) < 150


def test_the_verdict_details_the_first_differing_case_but_why_stays_as_students_see_it():
    verdict = compare_wire({"value": [1, {"k": [0, 5]}, 3]}, {"value": [1, {"k": [0, 4]}, 9]})
    assert verdict.why == "2 of 3 cases differ from the reference"
    assert verdict.detail == 'case 1 → ["k"][1]: expected 4, got 5'
    assert compare_wire({"value": [1, 2]}, {"value": [1, 3]}).detail == "case 1: expected 3, got 2"
    assert compare_wire({"value": 3}, {"value": 4}).detail == "expected 4, got 3"
    assert compare_wire({"value": [1]}, {"value": [1]}).detail == ""


def test_the_first_difference_reaches_the_instructor_report_not_the_student():
    from graders.boundary.job_result import CellRun, JobOutcome, JobResult, ProbeRecord
    from graders.grader.cells import Restored, TestCell
    from graders.grader.grading import Lab, score
    from graders.grader.results import NotebookGrade
    from graders.inside.probing import Probe
    from graders.nbgrader.reports import gradescope_results

    probe_of = Probe("test_x", lambda ns, draw: None)
    lab = Lab(
        "ch",
        "lab_x",
        nbformat.v4.new_notebook(),
        "",
        "lab_x.py",
        {"test_x": probe_of},
        [TestCell("test_x", 2.0, "", "")],
    )
    reference = JobResult({}, {"test_x": ProbeRecord([1, {"k": 4}])})
    outcome = JobOutcome(
        "ok", result=JobResult({"test_x": CellRun(True)}, {"test_x": ProbeRecord([1, {"k": 5}])})
    )
    [cell] = score(lab, Restored([]), outcome, reference)
    assert (
        cell.detail
        == '1 of 2 cases differ from the reference; first difference: case 1 → ["k"]: expected 4, got 5'
    )
    assert cell.visible_ok and cell.why == "hidden check '<lambda>' failed"  # fixed text: no count, no values
    shown = gradescope_results(NotebookGrade("ada", "ch", "lab_x", "graded", cells=[cell]))
    assert "expected" not in str(shown)
