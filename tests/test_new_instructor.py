"""docs/authoring.md's path from nothing to a graded class CSV works as written, in an empty folder."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.inprocess import run_line
from tests.test_docs import blocks

pytestmark = [pytest.mark.slow, pytest.mark.grading]


def test_a_new_instructor_goes_from_nothing_to_a_graded_class_csv(tmp_path: Path) -> None:
    (walkthrough,) = [b for b in blocks(ROOT / "docs" / "authoring.md") if b.walkthrough]
    lines = [line for line in walkthrough.text.splitlines() if line.strip()]
    assert lines[0].startswith("labs new chapter") and lines[-1].startswith("labs export")
    for line in lines:
        proc = run_line(line, cwd=tmp_path)
        assert proc.returncode == 0, f"{line}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        if line.startswith(
            "labs check"
        ):  # the scaffold passes its own self-check: 3 wrong solutions per exercise lose
            assert "1/1 chapters pass the self-check" in proc.stdout and proc.stdout.count("loses") == 6, (
                proc.stdout
            )
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "build" / "grades.csv").open())}
    assert set(rows) == {"ada", "ben"}
    assert (float(rows["ada"]["score"]), float(rows["ben"]["score"])) == (0.0, 10.0)
    assert float(rows["ben"]["max_score"]) == 10.0 and float(rows["ben"]["test_halve"]) == 5.0
