"""Probe records as the grader receives them: a test's dict passed through the boundary's parser first."""

from __future__ import annotations

from typing import Any

from graders.boundary.job_result import ProbeRecord
from graders.grader.compare import Verdict, compare


def record(raw: Any) -> ProbeRecord:
    """``raw`` (``{"value"}`` or ``{"error"}``, with or without contracts) as :mod:`graders.boundary.job_result`
    reads it; a malformed one fails the test."""
    parsed = ProbeRecord.from_wire(raw)
    assert parsed is not None, f"not a probe record: {raw!r}"
    return parsed


def compare_wire(got: Any, want: Any, rtol: float | None = None, atol: float | None = None) -> Verdict:
    """:func:`graders.grader.compare.compare` of two raw records."""
    return compare(record(got), record(want), rtol, atol)
