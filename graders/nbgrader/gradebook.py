"""nbgrader's gradebook for sandboxed grades: each chapter's assignment, and each submission's scores.

nbgrader never runs the tests here: the scores come from :mod:`graders.grader.grading` and are written cell by
cell, one commit per notebook, so one notebook that cannot be recorded leaves the others recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nbgrader.api import Gradebook, MissingEntry

from graders.grader.results import NotebookGrade
from graders.grader.submissions import plain
from graders.nbgrader import nbgrader_course as course
from graders.nbgrader.course_root import CourseRoot
from graders.nbgrader.release import record_labs

if TYPE_CHECKING:
    from graders.grader.grading import Lab


def ensure_assignments(
    root: Path, db_url: str, labs: dict[tuple[str, str], Lab], lab_paths: dict[str, list[Path]]
) -> None:
    """Put each chapter's labs into the gradebook (nbgrader generate_assignment) unless already there with the
    points they have now; ValueError when a lab's points moved after submissions of its chapter were graded (the
    class would be scored out of two different totals)."""
    grading = CourseRoot(root, db_url)
    grading.write_config()
    with course.open_gradebook(db_url) as gradebook:
        known = {a.name: {n.name for n in a.notebooks} for a in gradebook.assignments}
        points = {
            (a.name, n.name, c.name): float(c.max_score)
            for a in gradebook.assignments
            for n in a.notebooks
            for c in n.grade_cells
        }
        graded = {a.name for a in gradebook.assignments if a.num_submissions}
    for chapter, paths in lab_paths.items():
        moved = points_moved(labs, points, chapter)
        if moved and chapter in graded:
            raise ValueError(
                f"{chapter}: {moved[0]}, but submissions were graded with the gradebook's points: restore the "
                "lab's points, or grade the class afresh in a new --root"
            )
        if {p.stem for p in paths} <= known.get(chapter, set()) and not moved:
            continue
        record_labs(grading, chapter, paths)


def points_moved(
    labs: dict[tuple[str, str], Lab], points: dict[tuple[str, str, str], float], chapter: str
) -> list[str]:
    """Each test cell of ``chapter``'s labs whose points differ from the gradebook's (cells it does not know yet
    are new, not moved)."""
    return [
        f"{notebook}'s {test.grade_id} is worth {test.points:g} in the lab and {points[key]:g} in the gradebook"
        for (lab_chapter, notebook), lab in sorted(labs.items())
        if lab_chapter == chapter
        for test in lab.tests
        if (key := (chapter, notebook, test.grade_id)) in points and points[key] != float(test.points)
    ]


def record(db_url: str, grades: list[NotebookGrade]) -> list[tuple[NotebookGrade, str]]:
    """Write each notebook's scores into the gradebook (students and submissions created as needed),
    one commit per notebook; returns the notebooks that could not be recorded and why (rolled back)."""
    failed = []
    try:
        with course.open_gradebook(db_url) as gradebook:
            for grade in grades:
                try:
                    record_one(gradebook, grade)
                except Exception as err:  # noqa: BLE001 - one notebook's failure leaves the others recorded
                    gradebook.db.rollback()
                    failed.append((grade, reason(err)))
    except Exception as err:  # noqa: BLE001 - the gradebook itself failed: every notebook not yet recorded says so
        done = {id(g) for g, _ in failed}
        failed += [(g, reason(err)) for g in grades if id(g) not in done]
    return failed


def record_one(gradebook: Gradebook, grade: NotebookGrade) -> None:
    """Write one notebook's scores and commit them. A manual score stays while the automatic score it
    overrides stays the same (a regrade of the same work); when that changes (new work, a rotated salt), the
    manual score was for something else: it is cleared, and the grade's flags say so."""
    gradebook.update_or_create_student(grade.student)
    try:
        gradebook.find_submission(grade.chapter, grade.student)
    except MissingEntry:
        gradebook.add_submission(grade.chapter, grade.student)
    cleared = []
    for cell in grade.cells:
        entry = gradebook.find_grade(cell.grade_id, grade.notebook, grade.chapter, grade.student)
        if (
            entry.manual_score is not None
            and entry.auto_score is not None
            and float(entry.auto_score) != cell.score
        ):
            cleared.append(
                f"manual score {float(entry.manual_score):g} of {cell.grade_id} cleared: the automatic "
                f"score changed ({float(entry.auto_score):g} -> {cell.score:g}), set it again if it still holds"
            )
            entry.manual_score = None
        entry.auto_score = cell.score
    gradebook.db.commit()
    grade.flags += cleared


def reason(err: BaseException) -> str:
    """An exception as a short plain line: its type and first line (a database's own error, when
    SQLAlchemy wraps one)."""
    err = getattr(err, "orig", None) or err
    text = str(err).strip()
    return plain(f"{type(err).__name__}: {text}" if text else type(err).__name__, 200)


def mark_grader_error(grade: NotebookGrade, step: str, why: str) -> None:
    """Turn a failure after grading into the notebook's status, naming the notebook and the step."""
    line = f"grader error: {step} {grade.student}/{grade.chapter}/{grade.notebook} failed ({why})"
    grade.status = "grader error"
    grade.error = f"{grade.error}; {line}" if grade.error else line
