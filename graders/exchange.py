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

Who submitted: each student's server runs as their own unix user (`labs hub`), so a submission's folder in
``inbound/`` is owned by the student who made it. nbgrader names it after the student it claims
(``<student>+<chapter>+<timestamp>+<random>``), which a student can set to anyone (``student_id`` in their own
nbgrader config), and nbgrader's own ``check_owner`` only warns and collects it anyway. :class:`OwnedCollect`
collects only submissions owned by the student they name and lists the others as refused; ``check_owner=False``
(`labs collect --no-owner-check`) is for `labs hub --demo`, where one unix user runs every server.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.apps import NbGraderAPI
from nbgrader.exchange.default import ExchangeCollect

from graders import nbgrader_course as course

SUBMISSION_FILES = ["timestamp.txt", "submission_secret.txt"]


@dataclass(frozen=True)
class Collected:
    """What collect found: each student's collected folder, and the submissions refused (owned by someone
    other than the student they name: ``inbound`` name -> its owner)."""

    folders: dict[str, Path]
    refused: dict[str, str] = field(default_factory=dict)


def owner_of(path: str) -> str:
    """The unix user owning ``path`` (its uid when no user has it)."""
    uid = os.stat(path).st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def forged(inbound: Path, chapter: str, student: str = "*") -> dict[str, str]:
    """The submissions of ``chapter`` in ``inbound`` named after a student other than the unix user who owns
    them: ``folder name -> owner``."""
    found = {}
    for path in sorted(inbound.glob(f"{student}+{chapter}+*")):
        owner = owner_of(str(path))
        if owner != path.name.rsplit("+", 3)[0]:
            found[path.name] = owner
    return found


class OwnedCollect(ExchangeCollect):
    """nbgrader's collect, taking each student's latest submission among those their own unix user made.

    A submission named after a student but owned by another user is never collected (nbgrader's ``check_owner``
    would log "cheating attempt?" and collect it), and the student's own latest submission is collected as if it
    were not there."""

    def init_src(self) -> None:
        super().init_src()
        if not self.check_owner:
            return
        student = self.coursedir.student_id or "*"
        refused = forged(Path(self.inbound_path), self.coursedir.assignment_id, student)
        latest: dict[str, dict] = {}
        pattern = os.path.join(self.inbound_path, f"{student}+{self.coursedir.assignment_id}+*")
        for record in (self._path_to_record(path) for path in glob.glob(pattern)):
            if record["filename"] in refused:
                self.log.warning("not collected: %s names %s but was submitted by %s", record["filename"],
                                 record["username"], refused[record["filename"]])
            elif record["username"] not in latest or record["timestamp"] > latest[record["username"]]["timestamp"]:
                latest[record["username"]] = record
        self.src_records = [latest[name] for name in sorted(latest)]


def exchange_api(root: Path, exchange: Path, include: list[str] | None = None,
                 check_owner: bool = True) -> NbGraderAPI:
    """NbGraderAPI over the course ``root`` with the exchange at ``exchange``; copies keep only the files
    named in ``include`` (all when None); collect takes only submissions owned by the student they name unless
    ``check_owner`` is False."""
    exchange.mkdir(parents=True, exist_ok=True)
    course.ensure_tools_on_path()
    root.mkdir(parents=True, exist_ok=True)
    config = course.nbgrader_config(root)
    config.Exchange.root = str(exchange)
    config.ExchangeReleaseAssignment.force = True  # releasing again replaces the chapter in the exchange
    config.ExchangeFactory.collect = OwnedCollect
    config.ExchangeCollect.check_owner = check_owner
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


def collect(root: Path, chapter: str, exchange: Path, labs: list[str], check_owner: bool = True) -> Collected:
    """Each student's latest submission of ``chapter`` (its ``labs`` notebooks) into ``root/submitted``; with
    ``check_owner``, only those owned by the student they name (the others are in ``refused``)."""
    api = exchange_api(root, exchange, include=[*labs, *SUBMISSION_FILES], check_owner=check_owner)
    course.require_success(api.collect(chapter, update=True), f"collect {chapter}")
    refused = forged(exchange / course.COURSE_ID / "inbound", chapter) if check_owner else {}
    submitted = root / "submitted"
    folders = {p.parent.name: p for p in sorted(submitted.glob(f"*/{chapter}")) if p.is_dir()}
    return Collected(folders, refused)


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
