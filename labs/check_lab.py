"""`labs check-lab`: a self-learner grades their own lab answer with the hidden checks, as a class is graded.

The notebook goes through `labs grade`'s own path (:func:`graders.pipeline.grade_submissions`: the sandbox,
the probes against the reference, the gradebook) in a private grading root under ``build/``, made for this
run and removed after it, so the instructor's detail (``results.json``: first differing case, hidden inputs)
is never left on disk. What comes back is :func:`graders.nbgrader.reports.student_view` of the grade: the points of
each test cell and the fixed text a graded student reads in their feedback (``hidden check '<probe
docstring>' failed``), never hidden test code or inputs.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from graders import coursedir
from graders import paths as defaults
from labs.console import console, printable

STUDENT = "you"  # the one student of the private grading root


class NotALab(ValueError):
    """The notebook is not a lab of the course; the message is one line naming it."""


@dataclass(frozen=True)
class LabCheck:
    """What `labs check-lab` shows: the grade as a graded student would see it."""

    lab: str  # <chapter>/<lab>.ipynb
    status: str
    error: str
    cells: list[tuple[str, float, float, str]]  # (test cell, points earned, points, why)

    @property
    def score(self) -> float:
        return sum(earned for _, earned, _, _ in self.cells)

    @property
    def max_score(self) -> float:
        return sum(points for _, _, points, _ in self.cells)


def lab_of(notebook: Path, course: Path) -> tuple[str, Path]:
    """``(chapter, the course's lab)`` a student's notebook answers: the chapter is its folder's name,
    as in ``student/03_modules/lab_modules.ipynb``."""
    if not notebook.is_file():
        raise NotALab(f"{notebook}: no such notebook")
    chapter = coursedir.chapter_of(notebook)
    source = course / chapter / notebook.name
    if not coursedir.is_lab(notebook) or not source.is_file():
        raise NotALab(
            f"{notebook}: not a lab of {course} (a lab is <chapter>/lab_*.ipynb, in a folder named "
            "after its chapter, such as student/03_modules/lab_modules.ipynb)"
        )
    return chapter, source


def check_lab(
    notebook: Path, course: Path = defaults.COURSE, build: Path = defaults.BUILD, timeout: float | None = None
) -> LabCheck:
    """Grade ``notebook`` alone in the sandbox against its lab in ``course``; the student's view of the grade.

    Raises :class:`NotALab`, or :class:`graders.pipeline.BadRequest` (one line) when grading cannot start.
    """
    from graders.boundary.protocol import Limits
    from graders.nbgrader.course_root import CourseRoot
    from graders.nbgrader.reports import for_student, student_view
    from graders.pipeline import GradeRequest, grade_submissions

    chapter, _ = lab_of(notebook, course)
    build.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="check-lab-", dir=build) as scratch:
        grading = CourseRoot(Path(scratch))
        submitted = grading.submitted / STUDENT / chapter
        submitted.mkdir(parents=True)
        shutil.copyfile(notebook, submitted / notebook.name)
        request = GradeRequest(
            grading.submitted,
            [chapter],
            course,
            Path(scratch) / "root",
            jobs=1,
            limits=Limits() if timeout is None else Limits(wall_seconds=timeout),
        )
        run = grade_submissions(request)
    if not run.batch.grades:  # refused before grading: a bad file (invalid JSON, too large ...)
        raise NotALab("; ".join(for_student(line) for line in run.rejected) or f"{notebook}: not graded")
    grade = student_view(run.batch.grades[0])
    cells = [(c.grade_id, c.score, c.points, c.why) for c in grade.cells]
    return LabCheck(f"{chapter}/{notebook.name}", grade.status, grade.error, cells)


def print_lab_check(result: LabCheck) -> None:
    """Points and why per test cell (the feedback's fixed text), then the total."""
    table = Table(title=f"labs check-lab {result.lab}")
    for column in ("test cell", "points", "why"):
        table.add_column(column, overflow="fold")
    for grade_id, earned, points, why in result.cells:
        table.add_row(
            escape(grade_id), f"{earned:g}/{points:g}", printable(why) if why else "[green]passed[/]"
        )
    console.print(table)
    if result.error:
        console.print(printable(f"{result.status}: {result.error}"), soft_wrap=True)
    console.print(f"{result.score:g}/{result.max_score:g} points ({result.status})")
