"""`labs grade`'s pipeline: chapters -> submissions -> this shard -> sandboxes -> labs -> grades -> gradebook -> reports.

Each step is a function; :func:`grade_submissions` runs them in order. The sandboxes start before the labs
load: their zygotes import torch while this process does (the grader's own modules load as they are needed). Bad input (a chapter, a lab or
a submissions folder that cannot be used) raises :class:`BadRequest` with one line naming the file;
a submission that cannot be graded never stops the others: it is that notebook's status.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from graders import coursedir
from graders import paths as defaults
from graders.boundary.protocol import Limits
from graders.grader.results import Batch, NotebookGrade
from graders.grader.salts import chapter_salt
from graders.grader.sandbox.pool import modules_imported_by, start_sandboxes
from graders.grader.submissions import Collected, Submission, collect, unpack
from graders.nbgrader.course_root import CourseRoot

if TYPE_CHECKING:
    from graders.grader.grading import Lab

Labs = dict[tuple[str, str], "Lab"]
LabPaths = dict[str, list[Path]]  # chapter -> its labs


class BadRequest(ValueError):
    """Input `labs grade` cannot use; the message is one line that names the file or option."""


@dataclass(frozen=True)
class GradeRequest:
    """One `labs grade` run, as the command line said it."""

    submissions: Path
    chapters: list[str] | None = None
    course: Path = defaults.COURSE
    root: Path = defaults.GRADING_ROOT
    db: str | None = None
    jobs: int = 0
    limits: Limits = field(default_factory=Limits)
    shard: tuple[int, int] = (1, 1)
    report: Path | None = None
    vetted: bool = True  # False: solution cells run unread, the sandbox the only layer (tests of the sandbox)
    salts: Path | None = None  # the class's salts (graders.grader.salts): default <root>/salts

    @property
    def grading_root(self) -> CourseRoot:
        return CourseRoot(self.root, self.db)

    @property
    def db_url(self) -> str:
        return self.grading_root.db_url

    @property
    def report_dir(self) -> Path:
        return self.report or self.grading_root.reports

    @property
    def salts_dir(self) -> Path:
        return self.salts or self.grading_root.salts


@dataclass
class GradeRun:
    """What a run produced: the batch, the files refused, report problems, where the reports are."""

    batch: Batch
    rejected: list[str]
    problems: list[str]
    report_dir: Path

    @property
    def complete(self) -> bool:
        """Every notebook graded, nothing refused, every report written."""
        return (
            not self.rejected and not self.problems and all(g.status == "graded" for g in self.batch.grades)
        )


def in_shard(subs: list[Submission], index: int, count: int) -> list[Submission]:
    """The submissions of every count-th student (sorted by name), so machines split the class."""
    students = sorted({s.student for s in subs})
    mine = {name for k, name in enumerate(students) if k % count == index - 1}
    return [s for s in subs if s.student in mine]


def lab_paths_of(folders: list[Path]) -> LabPaths:
    """Each chapter's lab notebooks."""
    return {folder.name: coursedir.labs_in(folder) for folder in folders}


def load_labs(paths: LabPaths) -> Labs:
    """Every lab of the chapters, with probes; BadRequest names the file at fault."""
    from graders.grader.grading import load_lab  # torch

    labs = {}
    for chapter, notebooks in paths.items():
        for path in notebooks:
            try:
                labs[(chapter, path.stem)] = load_lab(path)
            except (ValueError, SyntaxError, OSError) as err:
                raise BadRequest(str(err)) from None
    return labs


def lab_code(paths: LabPaths) -> list[str]:
    """The code of every lab's cells and probe file, read without running any (what the sandboxes import);
    a file that cannot be read adds nothing here (:func:`load_labs` names it)."""
    code = []
    for path in (p for notebooks in paths.values() for p in notebooks):
        try:
            cells = nbformat.read(path, as_version=4).cells
            code += [
                c.source for c in cells if c.get("cell_type") == "code" and isinstance(c.get("source"), str)
            ]
            code.append(coursedir.probes_file(path).read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001 - load_labs reports the file
            continue
    return code


def gather(source: Path, chapters: dict[str, set[str]], scratch: Path) -> Collected:
    """Submissions from a folder or a zip of one (``zip -r submitted.zip submitted``: the class under one top folder
    is taken from that folder)."""
    if not source.exists():
        raise BadRequest(f"{source}: no such folder or zip")
    folder, rejected = source, []
    if source.is_file():
        try:
            folder, rejected = scratch, unpack(source, scratch)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError):
            raise BadRequest(f"{source}: not a zip file") from None
    found = _collect(folder, chapters)
    if not found.submissions and not found.rejected and (inner := _only_folder(folder)) is not None:
        found = _collect(inner, chapters)
    found.rejected = rejected + found.rejected
    if not found.submissions and not found.rejected:
        raise BadRequest(
            f"{source}: no submission of {', '.join(sorted(chapters))} in it "
            "(a submission is STUDENT/CHAPTER/LAB.ipynb at its top level)"
        )
    return found


def _only_folder(folder: Path) -> Path | None:
    """The one folder ``folder`` holds, when it holds nothing else (a real folder, not a link)."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return None
    only = entries[0] if len(entries) == 1 else None
    return only if only is not None and only.is_dir() and not only.is_symlink() else None


def _collect(root: Path, chapters: dict[str, set[str]]) -> Collected:
    try:
        return collect(root, chapters)
    except OSError as err:
        raise BadRequest(f"{root}: cannot read ({os.strerror(err.errno or 0)})") from None


def keep_books(root: Path, url: str, labs: Labs, batch: Batch, subs: list[Submission]) -> None:
    """Record every scored notebook in the gradebook and save its autograded copy; a failure is that
    notebook's ``grader error`` status (no autograded copy then), never the batch's."""
    from graders.nbgrader.feedback import remove_autograded, write_autograded
    from graders.nbgrader.gradebook import mark_grader_error, reason, record

    scored = [g for g in batch.grades if g.cells]
    failures = record(url, scored)
    for grade, why in failures:
        mark_grader_error(grade, "recording in the gradebook of", why)
    failed = {id(g) for g, _ in failures}
    submitted = {(s.student, s.chapter, s.notebook): s.nb for s in subs}
    for grade in scored:
        try:
            if id(grade) in failed:
                remove_autograded(root, grade)
            else:
                write_autograded(
                    root,
                    labs[(grade.chapter, grade.notebook)],
                    grade,
                    submitted.get((grade.student, grade.chapter, grade.notebook)),
                )
        except Exception as err:  # noqa: BLE001 - one notebook's feedback copy failing leaves the others
            mark_grader_error(grade, "writing the autograded notebook of", reason(err))


def write_reports(batch: Batch, out: Path, root: Path) -> list[str]:
    """This run's log (kept under ``root/runs``, and as results.json in ``out``) and summary.html; returns a
    line per report that could not be written."""
    from graders.nbgrader.gradebook import reason
    from graders.nbgrader.reports import run_log_path, write_results, write_summary

    problems = []
    for path, write in (
        (run_log_path(root), write_results),
        (out / "results.json", write_results),
        (out / "summary.html", write_summary),
    ):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write(batch, path)
        except Exception as err:  # noqa: BLE001 - the other reports and the gradebook still count
            problems.append(f"grader error: writing {path} failed ({reason(err)})")
    return problems


def _gradebook_ready(root: Path, url: str, labs: Labs, lab_paths: LabPaths) -> None:
    from graders.nbgrader.gradebook import ensure_assignments

    try:
        ensure_assignments(root, url, labs, lab_paths)
    except Exception as err:  # a bad URL or server: one line
        raise RuntimeError(
            f"gradebook {url}: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
        ) from err


def class_salts(folder: Path, chapters: list[str]) -> dict[str, int]:
    """Each chapter's salt, kept in ``folder`` (made on a chapter's first grading); BadRequest names the file."""
    try:
        return {chapter: chapter_salt(folder, chapter) for chapter in chapters}
    except (OSError, ValueError) as err:
        raise BadRequest(f"{folder}: cannot keep the class's salts ({err})") from None


def grade_submissions(
    request: GradeRequest,
    on_count: Callable[[int], None] = lambda _: None,
    on_graded: Callable[[NotebookGrade], None] = lambda _: None,
) -> GradeRun:
    """Grade ``request``'s share of the submissions in sandboxes into the gradebook, and write the reports.

    ``on_count`` hears how many notebooks will be graded, ``on_graded`` each one as it is done.
    """
    try:
        folders = coursedir.chapters_with_labs(request.chapters, request.course)
    except coursedir.LayoutError as err:
        raise BadRequest(str(err)) from None
    lab_paths = lab_paths_of(folders)
    root, url = request.root.resolve(), request.db_url
    with tempfile.TemporaryDirectory(prefix="labs-grade-") as scratch:
        try:
            found = gather(
                request.submissions,
                {c: {p.name for p in paths} for c, paths in lab_paths.items()},
                Path(scratch),
            )
        except BadRequest:
            load_labs(lab_paths)  # a broken lab is the first thing to fix: named before the submissions
            raise
        subs = in_shard(found.submissions, *request.shard)
        on_count(len(subs))
        jobs = request.jobs or os.cpu_count() or 1
        try:
            sandboxes = start_sandboxes(
                modules_imported_by(lab_code(lab_paths)),
                sum(map(len, lab_paths.values())),
                len(subs),
                jobs,
                request.limits,
                True,
                CourseRoot(root).sandbox_logs,
            )
            try:
                labs = {key: replace(lab, vetted=request.vetted) for key, lab in load_labs(lab_paths).items()}
                from graders.grader.grading import grade_batch

                batch = grade_batch(
                    labs,
                    subs,
                    jobs,
                    request.limits,
                    True,
                    CourseRoot(root).sandbox_logs,
                    on_graded,
                    lambda: _gradebook_ready(root, url, labs, lab_paths),
                    started=sandboxes,
                    salts=class_salts(request.salts_dir, list(lab_paths)),
                )
            finally:
                sandboxes.close()
        except RuntimeError as err:
            raise BadRequest(str(err)) from None
    keep_books(root, url, labs, batch, subs)
    return GradeRun(batch, found.rejected, write_reports(batch, request.report_dir, root), request.report_dir)
