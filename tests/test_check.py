"""`labs check` through the sandboxed grader: the fixture lab is sound; a check that passes on the blank release is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, labs

pytestmark = [pytest.mark.slow, pytest.mark.grading]
# The fixture lab is two exercises, 5 points and one wrong solution each: its own standard.
FIXTURE_STANDARD = ["--min-exercises", "2", "--min-points", "5", "--min-wrong", "1"]


def test_sound_lab_full_zero_and_wrong_solutions_lose(tmp_path: Path):
    result = labs("check", "fx_basic", "--course", str(FIXTURES / "course"), "--wrong-solutions",
                  str(FIXTURES / "wrong_solutions"), "--build", str(tmp_path), *FIXTURE_STANDARD)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "1/1 chapters pass the self-check" in out
    assert "5/5" in out and "0/5" in out
    assert out.count("wrong solution") == 2
    assert "scale__in_place.py" in out and "relu_grad__sign.py" in out
    assert "FAIL" not in out


def test_weak_test_that_passes_on_blank_release_fails_the_check(tmp_path: Path):
    result = labs("check", "weak_lab", "--course", str(FIXTURES / "failing"), "--build", str(tmp_path),
                  *FIXTURE_STANDARD)
    assert result.returncode == 1
    assert "passes on the blank release (a broken test): test_scale" in result.stdout


def test_unknown_chapter_is_one_line_exit_2():
    result = labs("check", "99_nope", "--course", str(FIXTURES / "course"))
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: 99_nope: no such chapter")


def test_a_lab_below_the_standard_fails_the_check(tmp_path: Path):
    result = labs("check", "fx_basic", "--course", str(FIXTURES / "course"), "--wrong-solutions",
                  str(FIXTURES / "wrong_solutions"), "--build", str(tmp_path))
    assert result.returncode == 1, result.stdout
    out = " ".join(result.stdout.split())
    assert "below the standard: lab_basic: 2 graded exercises, the standard is 6" in out
    assert "lab_basic: 5 points, the standard is 30" in out
    assert "exercise scale has 1 wrong solutions, the standard is 3" in out


def test_wrong_solution_files_nothing_uses_are_reported(tmp_path: Path):
    import shutil

    wrong = tmp_path / "wrong"
    shutil.copytree(FIXTURES / "wrong_solutions", wrong)
    (wrong / "fx_basic" / "scael__typo.py").write_text("def scale(t, factor):\n    return t\n")
    (wrong / "fx_basic" / "scale_no_slug.py").write_text("def scale(t, factor):\n    return t\n")
    result = labs("check", "fx_basic", "--course", str(FIXTURES / "course"), "--wrong-solutions", str(wrong),
                  "--build", str(tmp_path / "b"), *FIXTURE_STANDARD)
    assert result.returncode == 1, result.stdout
    out = " ".join(result.stdout.split())
    assert "scael__typo.py: no solution cell has grade_id 'scael' (known: relu_grad, scale)" in out
    assert "scale_no_slug.py: not named <solution grade_id>__<slug>.py, so no exercise uses it" in out
