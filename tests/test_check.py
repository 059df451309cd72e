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
    assert "FAIL" not in out and "warning" not in out


def test_weak_test_that_passes_on_blank_release_fails_the_check(tmp_path: Path):
    result = labs("check", "weak_lab", "--course", str(FIXTURES / "failing"), "--build", str(tmp_path),
                  *FIXTURE_STANDARD)
    assert result.returncode == 1
    assert "passes on the blank release (a broken test): test_scale" in result.stdout
    assert "warning lab_weak.ipynb: test_scale: the visible test passes on the blank release" in result.stdout


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


def _fixture_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the fixture course and its wrong solutions, to break one thing in."""
    import shutil

    course, wrong = tmp_path / "course", tmp_path / "wrong"
    shutil.copytree(FIXTURES / "course", course)
    shutil.copytree(FIXTURES / "wrong_solutions", wrong)
    return course, wrong


def _check(course: Path, wrong: Path, build: Path) -> tuple[int, str]:
    result = labs("check", "fx_basic", "--course", str(course), "--wrong-solutions", str(wrong),
                  "--build", str(build), *FIXTURE_STANDARD)
    return result.returncode, " ".join((result.stdout + result.stderr).split())


def test_a_probe_raising_on_the_source_shows_its_exception_and_frames(tmp_path: Path):
    course, wrong = _fixture_copy(tmp_path)
    probes = course / "fx_basic" / "probes" / "lab_basic.py"
    probes.write_text(probes.read_text().replace('return [ns["relu_grad"]', 'return [no_such_helper(ns)'))
    code, out = _check(course, wrong, tmp_path / "b")
    assert code == 1, out
    assert ("probe test_relu_grad (lab_basic.py) raised NameError: name 'no_such_helper' is not defined" in out), out
    assert "lab_basic.py:" in out and "in relu_grad: return [no_such_helper(ns)" in out, out
    assert "torch 2." not in out  # not the notebook's last output line any more


def test_a_field_that_differs_between_runs_names_the_first_case_and_key(tmp_path: Path):
    course, wrong = _fixture_copy(tmp_path)
    probes = course / "fx_basic" / "probes" / "lab_basic.py"
    probes.write_text(probes.read_text().replace(
        'return [ns["relu_grad"](draw.randn(draw.randint(1, 40))) for _ in range(5)]',
        'import time\n    return [{"grad": ns["relu_grad"](draw.randn(3)), "when": time.time_ns()} for _ in range(5)]'))
    code, out = _check(course, wrong, tmp_path / "b")
    assert code == 1, out
    assert "below full marks: test_relu_grad (hidden check 'relu_grad on random inputs': 5 of 5 cases differ" in out
    assert 'first difference: case 0 → ["when"]: expected ' in out, out


def test_a_missing_or_broken_probe_file_is_one_line_naming_it(tmp_path: Path):
    course, wrong = _fixture_copy(tmp_path)
    probes = course / "fx_basic" / "probes" / "lab_basic.py"
    text = probes.read_text()
    probes.write_text(text.replace("from graders.probing", "undefined_name\nfrom graders.probing"))
    code, out = _check(course, wrong, tmp_path / "b")
    assert code == 1 and "Traceback" not in out, out
    assert f"{probes}:3: the probe file does not import: NameError: name 'undefined_name' is not defined" in out, out
    probes.write_text(text.replace("def scale(", "def scale(("))
    result = labs("grade", str(tmp_path / "nothing"), "--course", str(course), "--root", str(tmp_path / "g"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"{probes}:7: the probe file does not import: SyntaxError" in " ".join(result.stderr.split())
    probes.unlink()
    code, out = _check(course, wrong, tmp_path / "c")
    assert code == 1 and "Traceback" not in out, out
    assert f"no probe file {probes}" in out


def test_only_jobs_of_the_source_carry_a_probe_traceback():
    from graders.job import Job, run_probes

    source = 'from graders.probing import probe\n\n@probe("test_x")\ndef x(ns, draw):\n    """x"""\n    return ns["f"]()\n'
    ns = {"f": lambda: 1 / 0}
    student = run_probes(source, "lab_x.py", ns, 1)["test_x"]["error"]
    reference = run_probes(source, "lab_x.py", ns, 1, traceback=True)["test_x"]["error"]
    assert student == "ZeroDivisionError: division by zero"
    assert reference.startswith(student + "\nlab_x.py:6 in x: return ns[\"f\"]()\n"), reference
    assert Job.from_plain(Job([], traceback=True).to_plain()).traceback
    assert not Job.from_plain(Job([]).to_plain()).traceback


def test_no_sandbox_check_grades_the_fixture_lab_without_bubblewrap(tmp_path: Path):
    """`labs check --no-sandbox` (what `python -m graders.trial` was): same verdicts, no bwrap."""
    result = labs("check", "fx_basic", "--no-sandbox", "--course", str(FIXTURES / "course"), "--wrong-solutions",
                  str(FIXTURES / "wrong_solutions"), "--build", str(tmp_path), *FIXTURE_STANDARD)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "labs check --no-sandbox: submissions run without bubblewrap" in result.stderr
    assert "1/1 chapters pass the self-check" in result.stdout
    assert "scale__in_place.py" in result.stdout and "FAIL" not in result.stdout


def test_a_probe_raising_on_the_source_shows_its_frames(tmp_path: Path):
    course, wrong = _fixture_copy(tmp_path)
    probes = course / "fx_basic" / "probes" / "lab_basic.py"
    probes.write_text(probes.read_text().replace('return [ns["relu_grad"]', 'return [no_such_helper(ns)'))
    result = labs("check", "fx_basic", "--no-sandbox", "--course", str(course), "--wrong-solutions", str(wrong),
                  "--build", str(tmp_path / "build"), *FIXTURE_STANDARD)
    out = " ".join(result.stdout.split())
    assert result.returncode == 1, result.stdout + result.stderr
    assert "NameError: name 'no_such_helper' is not defined" in out
    assert "in relu_grad: return [no_such_helper(ns)" in out


def test_other_right_solutions_must_earn_full_marks(tmp_path: Path):
    """A correct solution unlike the source's earns its exercise's points; one that does not is a strict probe."""
    right = tmp_path / "right" / "fx_basic"
    right.mkdir(parents=True)
    (right / "scale__mul_method.py").write_text("def scale(t, factor):\n    return t.mul(factor)\n")
    (right / "relu_grad__by_comparison.py").write_text(
        "def relu_grad(x):\n    return (x > 0).to(x.dtype)\n")
    base = ["check", "fx_basic", "--course", str(FIXTURES / "course"), "--wrong-solutions",
            str(FIXTURES / "wrong_solutions"), "--right-solutions", str(tmp_path / "right"), *FIXTURE_STANDARD]
    result = labs(*base, "--build", str(tmp_path / "b1"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert " ".join(result.stdout.split()).count("right solution") == 2
    (right / "scale__rounds.py").write_text("def scale(t, factor):\n    return (t * factor).round()\n")
    result = labs(*base, "--build", str(tmp_path / "b2"))
    assert result.returncode == 1, result.stdout
    assert "scale__rounds.py (its exercise): a correct solution lost points (a probe too strict)" in \
        " ".join(result.stdout.split())


def test_a_probe_that_needs_a_later_exercise_fails_the_cut_source(tmp_path: Path):
    """Wrong solutions run only up to their exercise; the source cut there must still earn it, so a probe
    that uses something defined later is reported (its wrong solutions' verdicts would mean nothing)."""
    course, wrong = _fixture_copy(tmp_path)
    probes = course / "fx_basic" / "probes" / "lab_basic.py"
    probes.write_text(probes.read_text().replace('cases.append([ns["scale"](x, factor), x])',
                                                 'cases.append([ns["scale"](x, factor), ns["relu_grad"](x)])'))
    code, out = _check(course, wrong, tmp_path / "b")
    assert code == 1, out
    assert "source cut after exercise scale" in out, out
    assert "its probe depends on cells after the exercise" in out, out
    assert "source cut after exercise relu_grad" not in out  # nothing follows the last exercise
