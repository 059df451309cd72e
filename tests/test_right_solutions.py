"""Every graded exercise of the course has at least three right solutions from different approaches: its
reference and two or more files in tests/right_solutions/<chapter>/ (`labs check` grades each and
fails unless it earns full marks). A new exercise without them fails here, not in review."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from graders.grader.cells import exercise_tests

ROOT = Path(__file__).resolve().parent.parent
LABS = sorted((ROOT / "course").glob("*/lab_*.ipynb"))
BESIDE_THE_REFERENCE = 2


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.parent.name)
def test_each_exercise_has_two_right_solutions_beside_its_reference(lab: Path) -> None:
    folder = ROOT / "tests" / "right_solutions" / lab.parent.name
    graded = [name for name, tests in exercise_tests(nbformat.read(lab, as_version=4)).items() if tests]
    short = {
        name: n for name in graded if (n := len(list(folder.glob(f"{name}__*.py")))) < BESIDE_THE_REFERENCE
    }
    assert graded and not short, (
        f"{lab.name}: exercises with fewer than {BESIDE_THE_REFERENCE} right solutions: {short}"
    )
