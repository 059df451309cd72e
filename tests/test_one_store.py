"""One store for every grade: nbgrader's gradebook. The CSV and Gradescope exports and the feedback read it;
each `labs grade` run leaves its own log (the reasons), never overwriting another run's; a manual score set
through nbgrader's API shows in every export. The class's salts are kept, so a regrade draws the class's inputs.

The runs here are written by the grading pipeline's own steps (gradebook, autograded copy, run log) from
grades made in-process: what a sandbox run would produce, without the sandboxes."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from graders.grader import salts
from graders.grader.results import Batch, CellGrade, NotebookGrade
from graders.nbgrader.course_root import CourseRoot
from tests.conftest import FIXTURES
from tests.inprocess import labs_here

COURSE = FIXTURES / "course"
FIRST, SECOND = "fx_basic", "fx_second"


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture course with a second chapter (a copy of the first under another name)."""
    folder = tmp_path_factory.mktemp("course")
    shutil.copytree(COURSE / FIRST, folder / FIRST)
    shutil.copytree(COURSE / FIRST, folder / SECOND)
    return folder


def _grade(student: str, chapter: str, scale: float, why: str = "") -> NotebookGrade:
    cells = [CellGrade("test_scale", 2.0, scale, why), CellGrade("test_relu_grad", 3.0, 3.0)]
    return NotebookGrade(student, chapter, "lab_basic", "graded", cells=cells)


def _run(root: Path, course: Path, chapter: str, grades: list[NotebookGrade], url: str = "") -> None:
    """What `labs grade` does after the sandboxes: gradebook, autograded copies, this run's log."""
    from graders.grader.grading import load_lab
    from graders.pipeline import _gradebook_ready, keep_books, write_reports

    lab = load_lab(course / chapter / "lab_basic.ipynb")
    labs_ = {(chapter, "lab_basic"): lab}
    url = url or f"sqlite:///{root / 'gradebook.db'}"
    _gradebook_ready(root, url, labs_, {chapter: [course / chapter / "lab_basic.ipynb"]})
    batch = Batch(grades, ["test"], {chapter: salts.chapter_salt(CourseRoot(root).salts, chapter)})
    keep_books(root, url, labs_, batch, [])
    assert not write_reports(batch, root / "reports", root)


@pytest.fixture(scope="module")
def graded(course: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("grading")
    _run(
        root,
        course,
        FIRST,
        [_grade("ada", FIRST, 2.0), _grade("ben", FIRST, 0.0, "hidden check 'scale' failed")],
    )
    _run(root, course, SECOND, [_grade("ada", SECOND, 0.0, "visible tests failed: NotImplementedError")])
    return root


def _gradescope(root: Path, out: Path, *options: str) -> dict[tuple[str, str], dict]:
    proc = labs_here("export", "--format", "gradescope", "--root", str(root), "--out", str(out), *options)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return {
        (p.parent.parent.name, p.parent.name): json.loads(p.read_text()) for p in out.glob("*/*/results.json")
    }


def _csv(root: Path, out: Path, *options: str) -> dict[tuple[str, str], dict]:
    proc = labs_here("export", "--format", "csv", "--root", str(root), "--out", str(out), *options)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return {(r["student"], r["chapter"]): r for r in csv.DictReader(out.read_text().splitlines())}


def test_two_runs_of_two_chapters_both_reach_gradescope(graded: Path, tmp_path: Path) -> None:
    shown = _gradescope(graded, tmp_path / "gs")
    assert set(shown) == {("ada", FIRST), ("ben", FIRST), ("ada", SECOND)}
    assert shown[("ada", FIRST)]["score"] == 5.0 and shown[("ada", SECOND)]["score"] == 3.0
    why = {t["name"]: t["output"] for t in shown[("ben", FIRST)]["tests"]}
    assert why["test_scale"] == "hidden check 'scale' failed"
    assert len(list((graded / "runs").glob("*.json"))) == 2  # each run's log kept
    assert set(_csv(graded, tmp_path / "grades.csv")) == set(shown)


def test_an_export_of_one_chapter_holds_that_chapter_alone(graded: Path, tmp_path: Path) -> None:
    """`labs export --chapter`: one assignment's sheet for a learning-management system, one at a time."""
    assert set(_csv(graded, tmp_path / "second.csv", "--chapter", SECOND)) == {("ada", SECOND)}
    assert set(_gradescope(graded, tmp_path / "gs", "--chapter", FIRST)) == {("ada", FIRST), ("ben", FIRST)}
    nothing = labs_here(
        "export", "--root", str(graded), "--out", str(tmp_path / "x.csv"), "--chapter", "99_none"
    )
    assert nothing.returncode == 2 and nothing.stderr.strip().endswith(
        f"no chapter 99_none in the gradebook (it has: {FIRST}, {SECOND})"
    ), nothing.stderr
    assert not (tmp_path / "x.csv").exists()


def test_a_manual_score_reaches_csv_gradescope_and_feedback(
    graded: Path, course: Path, tmp_path: Path
) -> None:
    from graders.nbgrader.nbgrader_course import open_gradebook

    url = f"sqlite:///{graded / 'gradebook.db'}"
    with open_gradebook(url) as gradebook:
        gradebook.find_grade("test_scale", "lab_basic", FIRST, "ben").manual_score = 1.5
        gradebook.db.commit()
    assert float(_csv(graded, tmp_path / "grades.csv")[("ben", FIRST)]["score"]) == 4.5
    ben = _gradescope(graded, tmp_path / "gs")[("ben", FIRST)]
    assert ben["score"] == 4.5
    manual = "score set by the instructor; the automatic checks: hidden check 'scale' failed"
    assert {t["name"]: t["output"] for t in ben["tests"]}["test_scale"] == manual
    proc = labs_here(
        "feedback", "--course", str(course), "--chapter", FIRST, "--root", str(graded), "--student", "ben"
    )
    assert proc.returncode == 0, proc.stderr
    page = (graded / "feedback" / "ben" / FIRST / "lab_basic.html").read_text()
    assert (
        "4.5" in page and "/2 points" not in page and "0/2" not in page
    )  # nbgrader's score, none of our own
    assert manual.replace("'", "&#x27;") in page or manual.replace("'", "&#39;") in page or manual in page


def test_a_regrade_with_a_new_automatic_score_clears_a_stale_manual_one(course: Path, tmp_path: Path) -> None:
    from graders.nbgrader.nbgrader_course import open_gradebook

    root = tmp_path / "grading"
    root.mkdir()
    url = f"sqlite:///{root / 'gradebook.db'}"
    _run(root, course, FIRST, [_grade("cy", FIRST, 0.0, "hidden check 'scale' failed")])
    with open_gradebook(url) as gradebook:
        gradebook.find_grade("test_scale", "lab_basic", FIRST, "cy").manual_score = 1.0
        gradebook.db.commit()
    same = _grade("cy", FIRST, 0.0, "hidden check 'scale' failed")
    _run(root, course, FIRST, [same])  # the same work graded again: the instructor's score stands
    assert not same.flags and float(_csv(root, tmp_path / "a.csv")[("cy", FIRST)]["score"]) == 4.0
    fixed = _grade("cy", FIRST, 2.0)
    _run(root, course, FIRST, [fixed])  # new work: the manual score was for the old one
    assert fixed.flags == [
        "manual score 1 of test_scale cleared: the automatic score changed (0 -> 2), "
        "set it again if it still holds"
    ]
    assert float(_csv(root, tmp_path / "b.csv")[("cy", FIRST)]["score"]) == 5.0
    proc = labs_here("feedback", "--course", str(course), "--chapter", FIRST, "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    assert (
        "score set by the instructor" not in (root / "feedback" / "cy" / FIRST / "lab_basic.html").read_text()
    )


def test_the_class_salt_is_made_once_and_kept(tmp_path: Path) -> None:
    folder = CourseRoot(tmp_path).salts
    first = salts.chapter_salt(folder, FIRST)
    assert salts.chapter_salt(folder, FIRST) == first != salts.chapter_salt(folder, SECOND)
    assert (
        oct((folder / FIRST).stat().st_mode & 0o777) == "0o600"
        and oct(folder.stat().st_mode & 0o777) == "0o700"
    )
    old, new = salts.rotate(folder, FIRST)
    assert old == first and new != first and salts.chapter_salt(folder, FIRST) == new
    assert (
        f"{FIRST} {salts.fingerprint(first)} -> {salts.fingerprint(new)}"
        in (folder / "rotations.log").read_text()
    )
    with pytest.raises(ValueError, match="not a chapter name"):
        salts.chapter_salt(folder, "../x")


def test_labs_salt_shows_and_rotates(tmp_path: Path) -> None:
    missing = labs_here(
        "salt", FIRST, "--root", str(tmp_path)
    )  # before the chapter's first grading: nothing made
    assert (
        missing.returncode == 2
        and "no salt for fx_basic yet" in missing.stderr
        and not (tmp_path / "salts" / FIRST).exists()
    )
    salts.chapter_salt(CourseRoot(tmp_path).salts, FIRST)  # what the first labs grade does
    shown = labs_here("salt", FIRST, "--root", str(tmp_path))
    assert shown.returncode == 0 and FIRST in shown.stdout, shown.stderr
    kept = salts.fingerprint(salts.chapter_salt(CourseRoot(tmp_path).salts, FIRST))
    assert kept in shown.stdout
    rotated = labs_here("salt", FIRST, "--root", str(tmp_path), "--rotate")
    assert rotated.returncode == 0 and f"({kept} -> " in rotated.stdout, rotated.stderr
    folder = CourseRoot(tmp_path).salts
    (folder / SECOND).write_bytes(b"\x00 not a salt")
    for chapter, why in (("../x", "'../x': not a chapter name"), (SECOND, "")):
        refused = labs_here("salt", chapter, "--root", str(tmp_path))
        lines = refused.stderr.strip().splitlines()
        assert (
            refused.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"error: {folder}: {why}")
        ), refused.stderr


def test_a_name_unfit_for_a_folder_is_refused_and_the_rest_exported(course: Path, tmp_path: Path) -> None:
    root = tmp_path / "grading"
    root.mkdir()
    _run(root, course, FIRST, [_grade("ada", FIRST, 2.0), _grade("../../etc", FIRST, 2.0)])
    (root / "runs" / "0-broken.json").write_text("{ not json")  # a log that cannot be read: skipped
    proc = labs_here("export", "--format", "gradescope", "--root", str(root), "--out", str(tmp_path / "gs"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"grader error: Gradescope export of ../../etc/{FIRST}/lab_basic failed" in proc.stderr
    assert json.loads((tmp_path / "gs" / "ada" / FIRST / "results.json").read_text())["score"] == 5.0
    assert (
        sorted(p.name for p in (tmp_path / "gs").iterdir()) == ["ada"]
        and not (tmp_path.parent / "etc").exists()
    )


def test_a_class_graded_in_shards_gets_every_feedback_and_export_from_one_command(
    course: Path, tmp_path: Path
) -> None:
    root = tmp_path / "grading"
    url = (
        f"sqlite:///{tmp_path / 'shared.db'}"  # the one gradebook the shards share (PostgreSQL on a cluster)
    )
    for shard, student in (("shard-1", "ada"), ("shard-2", "ben")):
        (root / shard).mkdir(parents=True)
        _run(root / shard, course, FIRST, [_grade(student, FIRST, 0.0, f"why {student}")], url)
    proc = labs_here(
        "feedback", "--course", str(course), "--chapter", FIRST, "--root", str(root), "--db", url
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pages = {
        p.parent.parent.name: p.read_text() for p in (root / "feedback").glob(f"*/{FIRST}/lab_basic.html")
    }
    assert set(pages) == {"ada", "ben"} and "why ben" in pages["ben"] and "why ada" not in pages["ben"]
    shutil.rmtree(root / "feedback")
    ben = labs_here(
        "feedback",
        "--course",
        str(course),
        "--chapter",
        FIRST,
        "--root",
        str(root),
        "--db",
        url,
        "--student",
        "ben",
    )  # graded in shard-2 alone: shard-1 has nothing of ben's, which is no error
    assert ben.returncode == 0 and not ben.stderr.strip(), ben.stdout + ben.stderr
    assert [p.parent.parent.name for p in (root / "feedback").glob(f"*/{FIRST}/*.html")] == ["ben"]
    out = tmp_path / "gs"
    assert (
        labs_here(
            "export", "--format", "gradescope", "--root", str(root), "--db", url, "--out", str(out)
        ).returncode
        == 0
    )
    whys = {
        p.parent.parent.name: json.loads(p.read_text())["tests"][0]["output"]
        for p in out.glob("*/*/results.json")
    }
    assert whys == {"ada": "why ada", "ben": "why ben"}


def _submit(folder: Path, student: str, code: str) -> None:
    import nbformat

    nb = nbformat.read(COURSE / FIRST / "lab_basic.ipynb", as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and "### BEGIN SOLUTION" in c.source]
    for cell, function in zip(cells, code.split("\n\ndef "), strict=True):  # each exercise in its own cell
        cell.source = function if function.startswith("def ") else "def " + function
    (folder / student / FIRST).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / student / FIRST / "lab_basic.ipynb")


# Differs from the reference on every case, by an amount that depends on the drawn input: the first differing
# case (its values) names the inputs the run drew.
SHIFTED = "def scale(t, factor):\n    return t * factor + 1\n\ndef relu_grad(x):\n    return (x > 0).to(x.dtype) + x\n"


@pytest.mark.grading
def test_a_regrade_of_one_student_draws_the_class_inputs(tmp_path: Path) -> None:
    class_, alone, root = tmp_path / "class", tmp_path / "alone", tmp_path / "grading"
    for student in ("ada", "ben"):
        _submit(class_, student, SHIFTED)
    _submit(alone, "ben", SHIFTED)

    def grade(subs: Path) -> dict:
        proc = labs_here(
            "grade",
            str(subs),
            "--course",
            str(COURSE),
            "--chapter",
            FIRST,
            "--root",
            str(root),
            "--jobs",
            "2",
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return json.loads((root / "reports" / "results.json").read_text())

    first, again = grade(class_), grade(alone)
    assert first["salts"] == again["salts"] and set(first["salts"]) == {FIRST}

    def details(run: dict) -> dict:
        ben = next(g for g in run["grades"] if g["student"] == "ben")
        return {c["grade_id"]: c["detail"] for c in ben["cells"]}

    assert all(details(first).values()) and details(first) == details(again)
    salts.rotate(CourseRoot(root).salts, FIRST)
    assert details(grade(alone)) != details(first)  # a rotated salt draws other inputs


def test_exporting_before_grading_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    for kind in ("csv", "gradescope"):
        proc = labs_here(
            "export", "--format", kind, "--root", str(tmp_path), "--out", str(tmp_path / f"out-{kind}")
        )
        assert proc.returncode == 2 and proc.stderr.startswith(f"error: {tmp_path}: nothing graded yet"), (
            proc.stderr
        )
        assert len(proc.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_exporting_a_released_but_ungraded_root_creates_nothing(tmp_path: Path) -> None:
    """After `labs release` the root has a gradebook with the labs and no grades: exporting says nothing is
    graded yet and writes no file; an --out of the wrong kind is named before the gradebook is read."""
    from graders.nbgrader.release import build_release

    root = tmp_path / "root"
    build_release([FIXTURES / "course" / "fx_basic"], CourseRoot(root))
    for kind in ("csv", "gradescope"):
        out = tmp_path / f"out-{kind}"
        proc = labs_here("export", "--format", kind, "--root", str(root), "--out", str(out))
        assert proc.returncode == 2 and "nothing graded yet" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists()
    unknown = labs_here("export", "--format", "xlsx", "--root", str(root))
    assert (
        unknown.returncode == 2
        and unknown.stderr.strip() == "error: --format xlsx: expected csv or gradescope"
    )
    released = labs_here(
        "export", "--root", str(root), "--out", str(tmp_path / "x.csv"), "--chapter", "fx_basic"
    )
    assert released.returncode == 2 and "nothing of fx_basic graded yet" in released.stderr, released.stderr
    folder, file = tmp_path / "a-folder", tmp_path / "a-file"
    folder.mkdir()
    file.write_text("x")
    csv_to_folder = labs_here("export", "--format", "csv", "--root", str(root), "--out", str(folder))
    assert csv_to_folder.stderr.strip() == f"error: --out {folder}: a folder; the CSV export is a file"
    gradescope_to_file = labs_here(
        "export", "--format", "gradescope", "--root", str(root), "--out", str(file)
    )
    assert (
        gradescope_to_file.stderr.strip() == f"error: --out {file}: a file; the Gradescope export is a folder"
    )
    assert csv_to_folder.returncode == gradescope_to_file.returncode == 2


def test_a_lab_whose_points_moved_after_grading_is_refused(tmp_path: Path) -> None:
    """Scores out of two totals in one class are refused: a lab edited after its chapter was graded stops
    `labs grade` (one line, nothing recorded); before any grading the gradebook takes the new points."""
    import nbformat

    from graders.grader.grading import load_lab
    from graders.nbgrader.nbgrader_course import open_gradebook
    from graders.pipeline import _gradebook_ready

    course = tmp_path / "course"
    shutil.copytree(COURSE / FIRST, course / FIRST)
    lab_path = course / FIRST / "lab_basic.ipynb"
    graded_root, fresh_root = tmp_path / "graded", tmp_path / "fresh"
    _run(graded_root, course, FIRST, [_grade("ada", FIRST, 2.0)])
    _gradebook_ready(
        fresh_root,
        f"sqlite:///{fresh_root / 'gradebook.db'}",
        {(FIRST, "lab_basic"): load_lab(lab_path)},
        {FIRST: [lab_path]},
    )
    nb = nbformat.read(lab_path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_scale")
    cell.metadata["nbgrader"]["points"] = 7
    nbformat.write(nb, lab_path)
    edited = {(FIRST, "lab_basic"): load_lab(lab_path)}
    with pytest.raises(
        RuntimeError, match="lab_basic's test_scale is worth 7 in the lab and 2 in the gradebook"
    ):
        _gradebook_ready(
            graded_root, f"sqlite:///{graded_root / 'gradebook.db'}", edited, {FIRST: [lab_path]}
        )
    fresh = f"sqlite:///{fresh_root / 'gradebook.db'}"
    _gradebook_ready(fresh_root, fresh, edited, {FIRST: [lab_path]})
    with open_gradebook(fresh) as gradebook:
        assert gradebook.find_grade_cell("test_scale", "lab_basic", FIRST).max_score == 7
