"""`labs check` through the sandboxed grader: the fixture lab is sound; a check that passes on the blank release is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.inprocess import labs_here

pytestmark = [pytest.mark.slow, pytest.mark.grading]
# The fixture lab is two exercises, 5 points and one wrong solution each: its own standard.
FIXTURE_STANDARD = ["--min-exercises", "2", "--min-points", "5", "--min-wrong", "1"]


def test_sound_lab_full_zero_and_wrong_solutions_lose(tmp_path: Path):
    result = labs_here(
        "check",
        "fx_basic",
        "--course",
        str(FIXTURES / "course"),
        "--wrong-solutions",
        str(FIXTURES / "wrong_solutions"),
        "--build",
        str(tmp_path),
        *FIXTURE_STANDARD,
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "1/1 chapters pass the self-check" in out
    assert "5/5" in out and "0/5" in out
    assert out.count("wrong solution") == 2
    assert "scale__in_place.py" in out and "relu_grad__sign.py" in out
    assert "FAIL" not in out and "warning" not in out


def test_every_verdict_holds_under_several_salts(tmp_path: Path):
    result = labs_here(
        "check",
        "fx_basic",
        "--course",
        str(FIXTURES / "course"),
        "--wrong-solutions",
        str(FIXTURES / "wrong_solutions"),
        "--build",
        str(tmp_path),
        "--salts",
        "3",
        *FIXTURE_STANDARD,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1/1 chapters pass the self-check" in result.stdout and "under salt" not in result.stdout
    refused = labs_here("check", "fx_basic", "--course", str(FIXTURES / "course"), "--salts", "0")
    assert refused.returncode == 2 and "--salts must be at least 1" in refused.stderr


def test_unknown_chapter_is_one_line_exit_2():
    result = labs_here("check", "99_nope", "--course", str(FIXTURES / "course"))
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: 99_nope: no such chapter")


def test_only_jobs_of_the_source_carry_a_probe_traceback():
    from graders.inside.job import run_probes

    source = 'from graders.inside.probing import probe\n\n@probe("test_x")\ndef x(ns, draw):\n    """x"""\n    return ns["f"]()\n'
    ns = {"f": lambda: 1 / 0}
    student = run_probes(source, "lab_x.py", ns, 1)["test_x"]["error"]
    reference = run_probes(source, "lab_x.py", ns, 1, traceback=True)["test_x"]["error"]
    assert student == "ZeroDivisionError: division by zero"
    assert reference.startswith(student + '\nlab_x.py:6 in x: return ns["f"]()\n'), reference


def test_no_sandbox_check_grades_the_fixture_lab_without_bubblewrap_and_holds_it_to_the_standard(
    tmp_path: Path,
):
    """`labs check --no-sandbox` (what `python -m graders.trial` was): same verdicts, no bwrap; and under the
    course's standard (no --min-* options) the small fixture lab fails the check, saying why."""
    result = labs_here(
        "check",
        "fx_basic",
        "--no-sandbox",
        "--course",
        str(FIXTURES / "course"),
        "--wrong-solutions",
        str(FIXTURES / "wrong_solutions"),
        "--build",
        str(tmp_path),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "labs check --no-sandbox: submissions run without bubblewrap" in result.stderr
    assert "scale__in_place.py" in result.stdout and "relu_grad__sign.py" in result.stdout
    failures = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert "FAIL (below)" not in result.stdout and len(failures) == 4, (
        failures
    )  # every version earned what it should
    assert all("below the standard" in line for line in failures), failures
    out = " ".join(result.stdout.split())
    assert "0/1 chapters pass the self-check" in out
    assert "below the standard: lab_basic: 2 graded exercises, the standard is 6" in out
    assert "lab_basic: 5 points, the standard is 30" in out
    assert "exercise scale has 1 wrong solutions, the standard is 3" in out
    assert "exercise relu_grad has 1 wrong solutions, the standard is 3" in out


# Every way a lab can fail the check, each in a chapter of its own (a copy of the fixture lab with one thing
# broken), checked in one run: one pool of sandboxes and one start-up for all of them.
BROKEN = {
    "fx_raising": ('return [ns["relu_grad"]', "return [no_such_helper(ns)"),
    "fx_differs": (
        'return [ns["relu_grad"](draw.randn(n)) for n in draw.sizes(0, 40, 5)]',
        'import time\n    return [{"grad": ns["relu_grad"](draw.randn(3)), "when": time.time_ns()} for _ in range(5)]',
    ),
    "fx_probe_import": ("from graders.inside.probing", "undefined_name\nfrom graders.inside.probing"),
    "fx_cut": (
        'cases.append([ns["scale"](x, factor), x])',
        'cases.append([ns["scale"](x, factor), ns["relu_grad"](x)])',
    ),
}
RIGHT = {
    "fx_right": {
        "scale__mul_method.py": "def scale(t, factor):\n    return t.mul(factor)\n",
        "relu_grad__by_comparison.py": "def relu_grad(x):\n    return (x > 0).to(x.dtype)\n",
    },
    "fx_strict": {"scale__rounds.py": "def scale(t, factor):\n    return (t * factor).round()\n"},
}


@pytest.fixture(scope="module")
def broken_labs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bool, str]]:
    """Chapter -> (passes the check, what `labs check` prints for it, whitespace folded)."""
    import shutil

    from graders.check.selfcheck import SolutionFolders, Standard, check_chapters
    from labs.console import console
    from labs.tables import print_chapter_check

    tmp = tmp_path_factory.mktemp("broken_labs")
    course, wrong, right = tmp / "course", tmp / "wrong", tmp / "right"
    chapters = [*BROKEN, "fx_no_probes", "fx_stray", "fx_right", "fx_strict"]
    for chapter in chapters:
        shutil.copytree(FIXTURES / "course" / "fx_basic", course / chapter)
        shutil.copytree(FIXTURES / "wrong_solutions" / "fx_basic", wrong / chapter)
    for chapter, (old, new) in BROKEN.items():
        probes = course / chapter / "probes" / "lab_basic.py"
        assert old in probes.read_text(), chapter
        probes.write_text(probes.read_text().replace(old, new))
    (course / "fx_no_probes" / "probes" / "lab_basic.py").unlink()
    (wrong / "fx_stray" / "scael__typo.py").write_text("def scale(t, factor):\n    return t\n")
    (wrong / "fx_stray" / "scale_no_slug.py").write_text("def scale(t, factor):\n    return t\n")
    for chapter, files in RIGHT.items():
        (right / chapter).mkdir(parents=True)
        for name, text in files.items():
            (right / chapter / name).write_text(text)
    shutil.copytree(FIXTURES / "failing" / "weak_lab", course / "weak_lab")
    results = check_chapters(
        [course / c for c in [*chapters, "weak_lab"]],
        tmp / "build",
        SolutionFolders.found(wrong, right),
        jobs=2,
        standard=Standard(2, 5, 1),
    )
    shown = {}
    for result in results:
        with console.capture() as captured:
            print_chapter_check(result)
        shown[result.chapter] = (result.ok, " ".join(captured.get().split()))
    return shown


def test_a_sound_copy_passes_beside_the_broken_ones(broken_labs):
    ok, out = broken_labs["fx_right"]
    assert ok, out
    assert out.count("right solution") == 2 and out.count("wrong solution") == 2, out


def test_weak_test_that_passes_on_blank_release_fails_the_check(broken_labs):
    ok, out = broken_labs["weak_lab"]
    assert not ok
    assert "passes on the blank release (a broken test): test_scale" in out, out
    assert "warning lab_weak.ipynb: test_scale: the visible test passes on the blank release" in out, out


def test_wrong_solution_files_nothing_uses_are_reported(broken_labs):
    ok, out = broken_labs["fx_stray"]
    assert not ok
    assert "scael__typo.py: no solution cell has grade_id 'scael' (known: relu_grad, scale)" in out, out
    assert "scale_no_slug.py: not named <solution grade_id>__<slug>.py, so no exercise uses it" in out, out


def test_a_probe_raising_on_the_source_shows_its_exception_and_frames(broken_labs):
    ok, out = broken_labs["fx_raising"]
    assert not ok
    assert (
        "probe test_relu_grad (lab_basic.py) raised NameError: name 'no_such_helper' is not defined" in out
    ), out
    assert "lab_basic.py:" in out and "in relu_grad: return [no_such_helper(ns)" in out, out
    assert "torch 2." not in out  # not the notebook's last output line any more


def test_a_field_that_differs_between_runs_names_the_first_case_and_key(broken_labs):
    ok, out = broken_labs["fx_differs"]
    assert not ok
    assert (
        "below full marks: test_relu_grad (hidden check 'relu_grad on random inputs' failed: 5 of 5 cases differ"
        in out
    )
    assert 'first difference: case 0 → ["when"]: expected ' in out, out


def test_a_probe_file_that_does_not_import_or_is_missing_is_one_line_naming_it(broken_labs, tmp_path: Path):
    ok, out = broken_labs["fx_probe_import"]
    assert not ok and "Traceback" not in out, out
    assert (
        "fx_probe_import/probes/lab_basic.py:3: the probe file does not import: NameError: name 'undefined_name' "
        "is not defined" in out
    ), out
    ok, out = broken_labs["fx_no_probes"]
    assert not ok and "Traceback" not in out, out
    assert "no probe file" in out and "fx_no_probes/probes/lab_basic.py" in out, out


def test_labs_grade_names_a_probe_file_with_a_syntax_error(tmp_path: Path):
    import shutil

    course = tmp_path / "course"
    shutil.copytree(FIXTURES / "course", course)
    probes = course / "fx_basic" / "probes" / "lab_basic.py"
    probes.write_text(probes.read_text().replace("def scale(", "def scale(("))
    result = labs_here(
        "grade", str(tmp_path / "nothing"), "--course", str(course), "--root", str(tmp_path / "g")
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    line = next(n for n, text in enumerate(probes.read_text().splitlines(), 1) if "def scale((" in text)
    assert f"{probes}:{line}: the probe file does not import: SyntaxError" in " ".join(result.stderr.split())


def test_other_right_solutions_must_earn_full_marks(broken_labs):
    """A correct solution unlike the source's earns its exercise's points; one that does not is a strict probe."""
    ok, out = broken_labs["fx_strict"]
    assert not ok
    assert "scale__rounds.py (its exercise): a correct solution lost points (a probe too strict)" in out, out


def test_a_probe_that_needs_a_later_exercise_fails_the_cut_source(broken_labs):
    """Wrong solutions run only up to their exercise; the source cut there must still earn it, so a probe
    that uses something defined later is reported (its wrong solutions' verdicts would mean nothing)."""
    ok, out = broken_labs["fx_cut"]
    assert not ok
    assert (
        "FAIL lab_basic.ipynb source cut after exercise scale: its probe depends on cells after the exercise"
        in out
    ), out
    assert "source cut after exercise relu_grad" not in out  # nothing follows the last exercise
