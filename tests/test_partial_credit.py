"""Partial credit: declared per probe, proportional to matched cases, rounded down, never full when a case differs."""

import pytest

from graders.compare import Verdict, compare, points_for
from graders.probing import probe


def test_all_or_nothing_by_default():
    verdict = compare({"value": [1, 2, 3, 9]}, {"value": [1, 2, 3, 4]})
    assert (verdict.differing, verdict.cases) == (1, 4)
    assert points_for(verdict, 5, None) == 0.0
    assert points_for(compare({"value": [1, 2]}, {"value": [1, 2]}), 5, None) == 5


def test_proportional_and_rounded_down_to_the_step():
    assert points_for(Verdict(False, 23, 60), 5, 1) == 3.0        # 37/60 of 5 = 3.08
    assert points_for(Verdict(False, 23, 60), 5, 0.5) == 3.0
    assert points_for(Verdict(False, 10, 60), 5, 0.5) == 4.0      # 50/60 of 5 = 4.17
    assert points_for(Verdict(False, 60, 60), 5, 1) == 0.0
    for differing in range(1, 100):
        assert points_for(Verdict(False, differing, 100), 6, 0.25) < 6, differing


def test_a_single_observation_or_a_raise_earns_nothing_partial():
    assert points_for(compare({"value": 3}, {"value": 4}), 5, 1) == 0.0
    assert points_for(compare({"error": "ValueError: x"}, {"value": [1, 2]}), 5, 1) == 0.0


def test_partial_step_must_be_positive():
    with pytest.raises(ValueError, match="partial_step must be positive"):
        probe("test_x", partial_step=0)


def test_a_reference_the_grader_cannot_compare_is_a_broken_probe():
    # A probe returning an nn.Module: both sides would become the same marker and "match".
    marker = {"__unplain__": "Linear"}
    verdict = compare({"value": [1, marker]}, {"value": [1, marker]})
    assert not verdict.ok and "cannot compare (Linear): a broken probe" in verdict.why
