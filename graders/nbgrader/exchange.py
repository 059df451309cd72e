"""nbgrader's exchange for a class on JupyterHub (`labs hub`): release, collect, release feedback.

Every step is nbgrader's own (NbGraderAPI's release_assignment and release_feedback; collect with nbgrader's
ExchangeCollect as :class:`OwnedCollect`, which finds and copies the submissions its own way, below) on the course
folders `labs` already uses:

- release: the labs of ``ROOT/release/<chapter>`` (built by `labs release`), with any file that is not a
  notebook, -> ``EXCHANGE/pytorch-labs/outbound/<chapter>``. Lessons stay out: nbgrader's Assignments tab
  offers a submission's feedback only when every notebook of it has some, and lessons are not graded;
- collect: the latest submission of each student -> ``ROOT/submitted/<student>/<chapter>/`` (ROOT: the course's
  nbgrader root, `labs`' ``--root``, ``build/grading``), the lab notebooks only (lessons are not graded; a lesson beside
  the lab would make `labs grade` refuse it as "not a lab"), with nbgrader's ``timestamp.txt`` and
  ``submission_secret.txt``; `labs grade ROOT/submitted` grades that folder as it is;
- release feedback: ``ROOT/feedback/<student>/<chapter>/*.html`` (written by `labs feedback`) -> the exchange,
  named by the hash nbgrader's fetch_feedback looks for. nbgrader's autograde would have copied the
  submission's timestamp and secret beside the feedback; `labs grade` does not run autograde, so
  :func:`release_feedback` puts the collected ones there first.

Who submitted, and what is collected: each student's server runs as their own unix user (`labs hub`), so a
submission's folder in ``inbound/`` is owned by the student who made it. nbgrader names it after the student it
claims (``<student>+<chapter>+<timestamp>+<random>``), which a student can set to anyone (``student_id`` in their own
nbgrader config), nbgrader's own ``check_owner`` only warns and collects it anyway, and its copy follows links
(a notebook that is a link to the instructor's source would be collected as the source). :class:`OwnedCollect`
never follows a link: it opens the inbound folder, each submission and each file in it without following
(``O_NOFOLLOW`` through ``dir_fd``, every component of the exchange's path included), checks the owner of what it
opened (``fstat``), and collects each student's latest submission that passes; every other entry is skipped and
named with the reason (:attr:`Collected.refused`), so one malformed entry never stops the class.
``check_owner=False`` (`labs collect --no-owner-check`) is for `labs hub --demo`, where one unix user runs every
server: links are still refused there.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import pwd
import re
import shutil
import stat
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.exchange.abc.exchange import ExchangeError
from nbgrader.exchange.default import ExchangeCollect
from nbgrader.utils import parse_utc
from traitlets.config import Config

from graders.coursedir import labs_in
from graders.nbgrader import nbgrader_course as course
from graders.nbgrader.course_root import CourseRoot

SUBMISSION_FILES = ["timestamp.txt", "submission_secret.txt"]
STUDENT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@+-]*$")  # never ".", "..", nor a path
NOFOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
PASS_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC  # search only: a 0711 folder on the way
NOFOLLOW_FILE = (
    os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
)  # NONBLOCK: a FIFO never hangs collect
TIMESTAMP_BYTES = 200


@dataclass(frozen=True)
class Collected:
    """What collect found: each student's collected folder, and every inbound entry it refused (``inbound`` name
    -> why: ``submitted by ada, not by the student it names``, ``a link: never followed``, ...)."""

    folders: dict[str, Path]
    refused: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Submission:
    """One acceptable submission in ``inbound``: its folder's name, student and time."""

    name: str
    student: str
    timestamp: datetime
    uid: int  # its folder's owner


@dataclass
class Survey:
    """What :func:`survey` found: each student's latest acceptable submission, and what it refused and why."""

    latest: dict[str, Submission] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)


def user_name(uid: int) -> str:
    """The unix user of ``uid`` (the uid itself when no user has it)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def open_entry(name: str, flags: int, dir_fd: int) -> int:
    """``os.open(name, flags, dir_fd=dir_fd)`` with ``O_NOFOLLOW`` in ``flags``; a link is always ELOOP (Linux
    answers ENOTDIR for a link opened with ``O_DIRECTORY``)."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as err:
        if err.errno != errno.ELOOP and stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def open_folder(path: Path) -> int:
    """A descriptor of the folder ``path`` (absolute), opened one component at a time without following any link;
    OSError (ELOOP, ENOTDIR) when a component is a link or not a folder."""
    if not path.is_absolute():
        raise ValueError(f"{path}: not an absolute path")
    fd = os.open("/", PASS_DIR)
    try:
        for n, part in enumerate(
            path.parts[1:], start=2
        ):  # the folders above: passed through, maybe not readable
            inner = open_entry(part, NOFOLLOW_DIR if n == len(path.parts) else PASS_DIR, fd)
            os.close(fd)
            fd = inner
    except OSError:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def opened(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


def _why_not(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "a link: never followed"
    if err.errno == errno.ENOTDIR:
        return "not a folder"
    return f"cannot be opened ({err.strerror})"


def _read_small(fd: int, limit: int) -> bytes:
    data = os.read(fd, limit + 1)
    if len(data) > limit:
        raise ValueError("too long")
    return data


def check_files(
    folder_fd: int,
    student: str,
    include: list[str] | None,
    owner_uid: int | None,
    max_bytes: int | None = None,
) -> str | None:
    """Why the submission open at ``folder_fd`` cannot be collected (a file it would copy is a link, not a plain
    file, not the student's, larger than ``max_bytes``, or its ``timestamp.txt`` is not a time), or None: a
    submission is collected whole or not at all."""
    for entry in sorted(os.listdir(folder_fd)):
        if include is not None and entry not in include:
            continue
        try:
            with opened(open_entry(entry, NOFOLLOW_FILE, folder_fd)) as fd:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    return f"{entry} is not a plain file"
                if owner_uid is not None and info.st_uid != owner_uid:
                    return f"{entry} belongs to {user_name(info.st_uid)}, not to {student}"
                if max_bytes is not None and info.st_size > max_bytes:
                    return f"{entry} is larger than {max_bytes} bytes"
                if entry == "timestamp.txt":
                    parse_utc(_read_small(fd, TIMESTAMP_BYTES).decode().strip())
        except OSError as err:
            return f"{entry} is {_why_not(err)}"
        except (ValueError, UnicodeDecodeError, OverflowError):
            return "its timestamp.txt is not a time"
    return None


def judge(
    inbound_fd: int,
    name: str,
    chapter: str,
    include: list[str] | None,
    check_owner: bool,
    max_bytes: int | None = None,
) -> Submission | str:
    """The submission ``name`` in the inbound folder open at ``inbound_fd``, or why it is refused."""
    parts = name.rsplit("+", 3)
    if len(parts) < 3 or parts[1] != chapter or not STUDENT_NAME.match(parts[0]):
        return "not a submission's name (<student>+<chapter>+<timestamp>+<random>)"
    try:
        timestamp = parse_utc(parts[2])
    except (ValueError, OverflowError):
        return "its name holds no time"
    student = parts[0]
    try:
        with opened(open_entry(name, NOFOLLOW_DIR, inbound_fd)) as fd:
            info = os.fstat(fd)
            if check_owner and user_name(info.st_uid) != student:
                return f"submitted by {user_name(info.st_uid)}, not by the student it names"
            why = check_files(fd, student, include, info.st_uid if check_owner else None, max_bytes)
    except OSError as err:
        return _why_not(err)
    return why or Submission(name, student, timestamp, info.st_uid)


class ExchangeNotSafe(RuntimeError):
    """The exchange's course or inbound folder is not the collector's (or root's): a student could rename or
    remove what others submitted."""


def check_keeper(inbound_fd: int) -> None:
    """ExchangeNotSafe unless the inbound folder open at ``inbound_fd`` and the course folder above it belong to
    this user or root."""
    with opened(os.open("..", PASS_DIR, dir_fd=inbound_fd)) as course_fd:
        for what, fd in (("course folder", course_fd), ("inbound folder", inbound_fd)):
            owner = os.fstat(fd).st_uid
            if owner not in (os.geteuid(), 0):
                raise ExchangeNotSafe(
                    f"the exchange's {what} belongs to {user_name(owner)}, not to the instructor "
                    "(labs hub makes it for the instructor before any student exists)"
                )


def survey(
    inbound: Path,
    chapter: str,
    student: str = "*",
    include: list[str] | None = None,
    check_owner: bool = True,
    max_bytes: int | None = None,
) -> Survey:
    """Each student's latest acceptable submission of ``chapter`` in ``inbound``, and every entry refused (named
    as nbgrader's collect would match it: ``<student>+<chapter>+*``). Nothing is followed: see the module."""
    found = Survey()
    with opened(open_folder(inbound)) as inbound_fd:
        check_keeper(inbound_fd)
        for name in sorted(os.listdir(inbound_fd)):
            if not fnmatch.fnmatchcase(name, f"{student}+{chapter}+*"):
                continue
            verdict = judge(inbound_fd, name, chapter, include, check_owner, max_bytes)
            if isinstance(verdict, str):
                found.refused[name] = verdict
            elif (
                verdict.student not in found.latest
                or verdict.timestamp > found.latest[verdict.student].timestamp
            ):
                found.latest[verdict.student] = verdict
    return found


def copy_submission(
    inbound: Path,
    submission: Submission,
    dest: Path,
    include: list[str] | None,
    owner_uid: int | None,
    max_bytes: int,
) -> dict[str, str]:
    """Copy the plain files of ``submission`` (those in ``include``) into ``dest``, opened without following and
    checked again once open (a link swapped in after :func:`survey` is still refused); ``dest`` is replaced only
    when every file was copied. Returns the files that could not be: name -> why (then ``dest`` is untouched)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    skipped = {}
    try:
        with (
            opened(open_folder(inbound)) as inbound_fd,
            opened(open_entry(submission.name, NOFOLLOW_DIR, inbound_fd)) as folder_fd,
        ):
            if owner_uid is not None and os.fstat(folder_fd).st_uid != owner_uid:
                raise PermissionError(errno.EPERM, "replaced since it was looked at")
            for entry in sorted(os.listdir(folder_fd)):
                if include is not None and entry not in include:
                    continue
                why = _copy_file(folder_fd, entry, staging / entry, owner_uid, max_bytes)
                if why:
                    skipped[entry] = why
        if skipped:
            return skipped
        staging.chmod(0o755)
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        os.replace(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return skipped


def _copy_file(folder_fd: int, entry: str, target: Path, owner_uid: int | None, max_bytes: int) -> str | None:
    try:
        with opened(open_entry(entry, NOFOLLOW_FILE, folder_fd)) as fd:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return "not a plain file"
            if owner_uid is not None and info.st_uid != owner_uid:
                return f"belongs to {user_name(info.st_uid)}"
            if info.st_size > max_bytes:
                return f"larger than {max_bytes} bytes"
            os.set_blocking(fd, True)
            with open(target, "xb") as out:
                while chunk := os.read(fd, 1 << 20):
                    out.write(chunk)
                    if out.tell() > max_bytes:
                        raise ValueError
    except OSError as err:
        target.unlink(missing_ok=True)
        return _why_not(err)
    except ValueError:
        target.unlink(missing_ok=True)
        return f"larger than {max_bytes} bytes"
    return None


def collected_time(folder: Path) -> datetime | None:
    """The time in a collected submission's ``timestamp.txt`` (None when there is none or it is not a time)."""
    try:
        return parse_utc((folder / "timestamp.txt").read_text()[:TIMESTAMP_BYTES].strip())
    except (OSError, ValueError, OverflowError):
        return None


class OwnedCollect(ExchangeCollect):
    """nbgrader's collect that follows no link and takes each student's latest submission among those their own
    unix user made (module docstring); :attr:`refused` names every entry it skipped, and why."""

    def init_src(self) -> None:
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        student = self.coursedir.student_id or "*"
        include = list(self.coursedir.include) if self.coursedir.include != ["*"] else None
        try:
            found = survey(
                Path(self.inbound_path).absolute(),
                self.coursedir.assignment_id,
                student,
                include,
                self.check_owner,
                self.coursedir.max_file_size * 1000,
            )
        except ExchangeNotSafe as err:
            self.fail(str(err))
        except OSError as err:
            self.fail(f"the exchange's inbound folder {self.inbound_path}: {_why_not(err)}")
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id):
            pass  # nbgrader's collect opens, and so creates, the course's gradebook: formgrader finds it there
        self.refused = dict(found.refused)
        for name, why in sorted(found.refused.items()):
            self.log.warning("not collected: %s: %s", name, why)
        self.submissions = dict(found.latest)
        self.src_records = [
            {"username": s.student, "filename": s.name, "timestamp": s.timestamp}
            for _, s in sorted(found.latest.items())
        ]

    def copy_files(self) -> None:
        """Each student's latest acceptable submission, when newer than the one collected before, copied by
        :func:`copy_submission` (what it skips is refused too)."""
        inbound = Path(self.inbound_path).absolute()
        include = list(self.coursedir.include) if self.coursedir.include != ["*"] else None
        chapter = self.coursedir.assignment_id
        for student, submission in sorted(self.submissions.items()):
            dest = Path(self.coursedir.format_path(self.coursedir.submitted_directory, student, chapter))
            existing = collected_time(dest) if dest.is_dir() else None
            if existing is not None and not submission.timestamp > existing:
                self.log.info("No newer submission to collect: %s %s", student, chapter)
                continue
            try:
                skipped = copy_submission(
                    inbound,
                    submission,
                    dest,
                    include,
                    submission.uid if self.check_owner else None,
                    self.coursedir.max_file_size * 1000,
                )
            except OSError as err:  # swapped for something else since survey looked
                self.refused[submission.name] = _why_not(err)
                self.log.warning("not collected: %s: %s", submission.name, _why_not(err))
                continue
            for entry, why in skipped.items():
                self.refused[f"{submission.name}/{entry}"] = why
                self.log.warning("not collected: %s/%s: %s", submission.name, entry, why)
            if not skipped:
                self.log.info("Collected submission: %s %s", student, chapter)


def exchange_api(
    root: Path, exchange: Path, include: list[str] | None = None, check_owner: bool = True
) -> NbGraderAPI:
    """NbGraderAPI over the course ``root`` with the exchange at ``exchange``; copies keep only the files
    named in ``include`` (all when None); collect takes only submissions owned by the student they name unless
    ``check_owner`` is False."""
    exchange.mkdir(parents=True, exist_ok=True)
    settings = Config()
    settings.ExchangeReleaseAssignment.force = True  # releasing again replaces the chapter in the exchange
    settings.ExchangeCollect.check_owner = check_owner
    if include is not None:
        settings.CourseDirectory.include = include
    return course.api(root, exchange=exchange, settings=settings)


def release_chapters(
    root: Path, chapters: list[Path], exchange: Path
) -> Iterator[tuple[str, list[str], Path]]:
    """Each chapter released to the exchange (:func:`release_assignment`), as it is done: the chapter, its labs and
    its outbound folder."""
    for chapter in chapters:
        labs = [p.name for p in labs_in(chapter)]
        yield chapter.name, labs, release_assignment(root, chapter.name, exchange, labs)


def collect_chapters(
    root: Path, chapters: list[Path], exchange: Path, check_owner: bool = True
) -> Iterator[tuple[str, Collected]]:
    """Each chapter's submissions collected (:func:`collect`), as it is done."""
    for chapter in chapters:
        labs = [p.name for p in labs_in(chapter)]
        yield chapter.name, collect(root, chapter.name, exchange, labs, check_owner)


def release_feedback_of(root: Path, chapters: list[str], exchange: Path) -> Iterator[tuple[str, list[str]]]:
    """Each chapter's feedback released (:func:`release_feedback`), as it is done: the students it reached."""
    for chapter in chapters:
        yield chapter, release_feedback(root, chapter, exchange)


def release_assignment(root: Path, chapter: str, exchange: Path, labs: list[str]) -> Path:
    """Put the ``labs`` of ``ROOT/release/<chapter>`` (from `labs release`) and its other files that are not
    notebooks into the exchange; returns the chapter's outbound folder."""
    released = CourseRoot(root).release / chapter
    others = (
        sorted(p.name for p in released.iterdir() if p.is_file() and p.suffix != ".ipynb")
        if released.is_dir()
        else []
    )
    api = exchange_api(root, exchange, include=[*labs, *others])
    course.require_success(api.release_assignment(chapter), f"release_assignment {chapter}")
    return exchange / course.COURSE_ID / "outbound" / chapter


def collect(root: Path, chapter: str, exchange: Path, labs: list[str], check_owner: bool = True) -> Collected:
    """Each student's latest submission of ``chapter`` (its ``labs`` notebooks) into ``root/submitted``; with
    ``check_owner``, only those owned by the student they name. Every entry refused is in ``refused``, with why;
    RuntimeError only when the exchange itself cannot be read."""
    api = exchange_api(root, exchange, include=[*labs, *SUBMISSION_FILES], check_owner=check_owner)
    api.coursedir.assignment_id = chapter
    collector = OwnedCollect(coursedir=api.coursedir, authenticator=api.authenticator, parent=api)
    collector.update = True
    try:
        collector.start()
    except ExchangeError as err:
        raise RuntimeError(f"collect {chapter}: {err}") from None
    submitted = CourseRoot(root).submitted
    folders = {p.parent.name: p for p in sorted(submitted.glob(f"*/{chapter}")) if p.is_dir()}
    return Collected(folders, dict(collector.refused))


def release_feedback(root: Path, chapter: str, exchange: Path) -> list[str]:
    """Release every rendered feedback of ``chapter`` to the exchange; returns the students it was released to."""
    students = []
    grading = CourseRoot(root)
    for folder in sorted(grading.feedback.glob(f"*/{chapter}")):
        submission = grading.submitted / folder.parent.name / chapter
        if not all((submission / name).is_file() for name in SUBMISSION_FILES):
            continue  # not collected from the exchange (graded from a folder or a zip): nothing to hand back
        for name in SUBMISSION_FILES:
            shutil.copyfile(submission / name, folder / name)
        students.append(folder.parent.name)
    api = exchange_api(root, exchange)
    for student in students:
        with (
            warnings.catch_warnings()
        ):  # nbgrader's API passes "authentictor=" (sic), which traitlets warns about
            warnings.filterwarnings("ignore", "Passing unrecognized arguments", DeprecationWarning)
            result = api.release_feedback(chapter, student)
        course.require_success(result, f"release_feedback {chapter} {student}")
    return students
