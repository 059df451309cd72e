"""nbgrader's exchange for a class on JupyterHub (`labs hub`): release, collect, release feedback.

Every step is nbgrader's own (NbGraderAPI: release_assignment, collect, release_feedback) on the course
folders `labs` already uses:

- release: the labs of ``build/nbgrader/release/<chapter>`` (built by `labs release`), with any file that is not
  a notebook, -> ``EXCHANGE/pytorch-labs/outbound/<chapter>``. Lessons stay out: nbgrader's Assignments tab
  offers a submission's feedback only when every notebook of it has some, and lessons are not graded;
- collect: the latest submission of each student -> ``ROOT/submitted/<student>/<chapter>/`` (ROOT is
  `labs grade`'s ``--root``, ``build/grading``), the lab notebooks only (lessons are not graded; a lesson beside
  the lab would make `labs grade` refuse it as "not a lab"), with nbgrader's ``timestamp.txt`` and
  ``submission_secret.txt``; `labs grade ROOT/submitted` grades that folder as it is;
- release feedback: ``ROOT/feedback/<student>/<chapter>/*.html`` (written by `labs feedback`) -> the exchange,
  named by the hash nbgrader's fetch_feedback looks for. nbgrader's autograde would have copied the
  submission's timestamp and secret beside the feedback; `labs grade` does not run autograde, so
  :func:`release_feedback` puts the collected ones there first.

One unix user runs every server (SimpleLocalProcessSpawner), so nbgrader's check that a submission's owner is
the student it names cannot hold and is switched off (``ExchangeCollect.check_owner``).
"""

from __future__ import annotations

import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

from nbgrader.apps import NbGraderAPI

from graders import nbgrader_course as course

SUBMISSION_FILES = ["timestamp.txt", "submission_secret.txt"]


@dataclass(frozen=True)
class Collected:
    """What collect found: each student's collected folder."""

    folders: dict[str, Path]


def exchange_api(root: Path, exchange: Path, include: list[str] | None = None) -> NbGraderAPI:
    """NbGraderAPI over the course ``root`` with the exchange at ``exchange``; copies keep only the files
    named in ``include`` (all when None)."""
    exchange.mkdir(parents=True, exist_ok=True)
    course.ensure_tools_on_path()
    root.mkdir(parents=True, exist_ok=True)
    config = course.nbgrader_config(root)
    config.Exchange.root = str(exchange)
    config.ExchangeReleaseAssignment.force = True  # releasing again replaces the chapter in the exchange
    config.ExchangeCollect.check_owner = False  # one unix user for everyone (see the module docstring)
    if include is not None:
        config.CourseDirectory.include = include
    return NbGraderAPI(config=config)


def release_assignment(build: Path, chapter: str, exchange: Path, labs: list[str]) -> Path:
    """Put the ``labs`` of ``build/release/<chapter>`` (from `labs release`) and its other files that are not
    notebooks into the exchange; returns the chapter's outbound folder."""
    released = build / "release" / chapter
    others = sorted(p.name for p in released.iterdir() if p.is_file() and p.suffix != ".ipynb") \
        if released.is_dir() else []
    api = exchange_api(build, exchange, include=[*labs, *others])
    course.require_success(api.release_assignment(chapter), f"release_assignment {chapter}")
    return exchange / course.COURSE_ID / "outbound" / chapter


def collect(root: Path, chapter: str, exchange: Path, labs: list[str]) -> Collected:
    """Each student's latest submission of ``chapter`` (its ``labs`` notebooks) into ``root/submitted``."""
    api = exchange_api(root, exchange, include=[*labs, *SUBMISSION_FILES])
    course.require_success(api.collect(chapter, update=True), f"collect {chapter}")
    submitted = root / "submitted"
    folders = {p.parent.name: p for p in sorted(submitted.glob(f"*/{chapter}")) if p.is_dir()}
    return Collected(folders)


def release_feedback(root: Path, chapter: str, exchange: Path) -> list[str]:
    """Release every rendered feedback of ``chapter`` to the exchange; returns the students it was released to."""
    students = []
    for folder in sorted((root / "feedback").glob(f"*/{chapter}")):
        submission = root / "submitted" / folder.parent.name / chapter
        if not all((submission / name).is_file() for name in SUBMISSION_FILES):
            continue  # not collected from the exchange (graded from a folder or a zip): nothing to hand back
        for name in SUBMISSION_FILES:
            shutil.copyfile(submission / name, folder / name)
        students.append(folder.parent.name)
    api = exchange_api(root, exchange)
    for student in students:
        with warnings.catch_warnings():  # nbgrader's API passes "authentictor=" (sic), which traitlets warns about
            warnings.filterwarnings("ignore", "Passing unrecognized arguments", DeprecationWarning)
            result = api.release_feedback(chapter, student)
        course.require_success(result, f"release_feedback {chapter} {student}")
    return students
