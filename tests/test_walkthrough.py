"""The instructor walkthrough of docs/platform.md works as written: its commands, run line by line."""

from __future__ import annotations

import csv
import json
import subprocess

import nbformat
import pytest

from tests.conftest import ROOT, labs_env
from tests.inprocess import run_line

pytestmark = [pytest.mark.slow, pytest.mark.grading]


def walkthrough() -> list[str]:
    """The command lines between the walkthrough markers of docs/platform.md."""
    text = (ROOT / "docs" / "platform.md").read_text(encoding="utf-8")
    block = text.split("<!-- walkthrough -->", 1)[1].split("<!-- /walkthrough -->", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("```")]


def lab_points(path) -> float:
    """What the instructor's source earns: the points of its graded cells."""
    cells = nbformat.read(path, as_version=4).cells
    return float(
        sum(
            c.metadata.get("nbgrader", {}).get("points", 0)
            for c in cells
            if c.metadata.get("nbgrader", {}).get("grade")
        )
    )


def test_readme_walkthrough_works_as_written() -> None:
    for folder in ("build/submitted", "build/grading", "build/gradescope"):
        subprocess.run(["rm", "-rf", str(ROOT / folder)], check=True)
    for line in walkthrough():
        proc = run_line(line, cwd=ROOT)
        assert proc.returncode == 0, f"{line}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    rows = {r["student"]: float(r["score"]) for r in csv.DictReader((ROOT / "build" / "grades.csv").open())}
    full = lab_points(ROOT / "course" / "02_tensors" / "lab_tensors.ipynb")
    assert full >= 30 and rows == {"ada": 0.0, "ben": full}
    assert (ROOT / "build/grading/feedback/ada/02_tensors/lab_tensors.html").is_file()
    ben = json.loads((ROOT / "build/gradescope/ben/02_tensors/results.json").read_text())
    assert ben["score"] == full
    listed = subprocess.run(
        ["nbgrader", "db", "student", "list"],
        cwd=ROOT / "build" / "grading",
        env=labs_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "ada" in listed.stdout + listed.stderr and "ben" in listed.stdout + listed.stderr
