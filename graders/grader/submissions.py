"""Collect submissions in nbgrader's layout (``<student>/<chapter>/<notebook>.ipynb``, a folder or a
zip of one) and read each notebook defensively: one bad file is one error, never a stopped batch.

Nothing in the submissions tree is followed: a symbolic link anywhere (student folder, chapter
folder, notebook) would let a submission hand in someone else's files, so it is refused.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

MAX_NOTEBOOK_BYTES = 20 << 20
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")
UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9 _.,:;()'/+@#%*-]")  # no markup, quotes, escapes or control characters
SYMLINK = "is a symbolic link (refused)"
MAX_ZIP_BYTES = 4 << 30


@dataclass
class Submission:
    """One submitted notebook, read and checked; ``error`` says why it cannot be graded."""

    student: str
    chapter: str
    notebook: str
    path: Path
    nb: nbformat.NotebookNode | None = None
    error: str = ""


@dataclass
class Collected:
    """Every submission found, plus entries that could not even be named (bad paths in a zip)."""

    submissions: list[Submission] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


class BadFile(Exception):
    """A submitted file that cannot be read as a notebook; the message says why, in a few words."""


def plain(text: str, limit: int = 160) -> str:
    """The first line of ``text``, shortened, with anything that could be markup or a terminal escape
    replaced by ``?``: such text goes into tables, HTML pages and feedback, so it quotes nothing live."""
    lines = str(text).strip().splitlines() or [""]
    return UNSAFE_CHARS.sub("?", lines[0])[:limit]


def unpack(archive: Path, into: Path) -> list[str]:
    """Extract a zip of submissions into ``into``; returns one error line per refused entry."""
    errors, total = [], 0
    with zipfile.ZipFile(archive) as zipped:
        for info in zipped.infolist():
            if info.is_dir():
                continue
            total += info.file_size
            if total > MAX_ZIP_BYTES:
                errors.append(
                    f"{archive}: {plain(repr(info.filename))}: refused (the zip unpacks to over "
                    f"{MAX_ZIP_BYTES >> 30} GiB)"
                )
                continue
            try:
                _extract(zipped, info, into)
            except BadFile as err:
                errors.append(f"{archive}: {plain(repr(info.filename))}: {err}")
            except Exception as err:  # noqa: BLE001 - a damaged or odd entry is refused, the rest extracted
                errors.append(
                    f"{archive}: {plain(repr(info.filename))}: refused ({plain(f'{type(err).__name__}: {err}')})"
                )
    return errors


def _extract(zipped: zipfile.ZipFile, info: zipfile.ZipInfo, into: Path) -> None:
    """Write one zip entry under ``into`` as a regular file; BadFile when it is not safe to."""
    parts = Path(info.filename).parts
    if info.filename.startswith("/") or ".." in parts or not all(SAFE_NAME.match(p) for p in parts):
        raise BadFile("refused (unsafe or non-ASCII path)")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise BadFile(SYMLINK)
    if info.file_size > MAX_NOTEBOOK_BYTES:
        raise BadFile(f"{info.file_size >> 20} MiB is over the {MAX_NOTEBOOK_BYTES >> 20} MiB limit")
    target = into / info.filename
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(zipped.read(info))


def read_notebook(path: Path) -> tuple[nbformat.NotebookNode | None, str]:
    """The notebook at ``path``, or None and a one-line reason (``bad file: PATH: why``).

    Every failure of reading, parsing or validating the file ends here, whatever it raises.
    """
    try:
        return parse_notebook(read_regular_file(path)), ""
    except BadFile as err:
        return None, f"bad file: {path}: {err}"
    except Exception as err:  # noqa: BLE001 - a file that breaks the reader is that submission's error
        return None, f"bad file: {path}: {describe(err)}"


def read_regular_file(path: Path) -> bytes:
    """The bytes of ``path`` when it is a regular file within the size limit; never follows a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise BadFile(
            SYMLINK if err.errno == errno.ELOOP else f"cannot open ({os.strerror(err.errno or 0)})"
        ) from err
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise BadFile("is a folder, not a notebook file")
        if not stat.S_ISREG(info.st_mode):
            raise BadFile("not a regular file")
        if info.st_nlink > 1:
            raise BadFile("has other hard links (refused: it may be someone else's file)")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_NOTEBOOK_BYTES + 1)
    finally:
        os.close(fd)
    if not data:
        raise BadFile("empty file")
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise BadFile(
            f"{max(info.st_size, len(data)) >> 20} MiB is over the {MAX_NOTEBOOK_BYTES >> 20} MiB limit"
        )
    return data


def parse_notebook(data: bytes) -> nbformat.NotebookNode:
    """A validated nbformat-4 notebook from ``data``, its nbgrader metadata well-formed; BadFile if not."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise BadFile(f"not a notebook (not UTF-8 text: byte {err.start})") from err
    except json.JSONDecodeError as err:
        raise BadFile(
            f"not a notebook (invalid JSON at line {err.lineno} column {err.colno}: "
            f"{plain(err.msg.removesuffix(' at'))})"
        ) from err
    if not isinstance(raw, dict) or raw.get("nbformat") != 4:
        version = raw.get("nbformat") if isinstance(raw, dict) else "?"
        raise BadFile(f"unsupported notebook format (nbformat {plain(repr(version), 20)}; need 4)")
    try:
        nbformat.validate(raw)
    except nbformat.ValidationError as err:
        raise BadFile(f"invalid notebook ({plain(getattr(err, 'message', err))}{_where(err)})") from err
    nb = nbformat.v4.to_notebook_json(raw)  # joins sources stored as lists of lines
    drop_malformed_nbgrader(nb)
    return nb


def _where(err: Exception) -> str:
    """`` at cells/3/outputs/0`` for a schema error, its student-chosen keys masked."""
    path = [
        str(p) if isinstance(p, int) or SAFE_NAME.match(str(p)) else "?"
        for p in getattr(err, "absolute_path", ())
    ]
    return f" at {'/'.join(path)}" if path else ""


def describe(err: BaseException) -> str:
    """What an unexpected reading failure means, in a few plain words."""
    if isinstance(err, RecursionError):
        return "not a notebook (nested too deeply to read)"
    if isinstance(err, ValueError) and "integer string conversion" in str(err):
        limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
        return f"not a notebook (a number with more than {limit} digits)"
    if isinstance(err, MemoryError):
        return "not a notebook (too large to read)"
    return f"not a notebook ({plain(f'{type(err).__name__}: {err}')})"


def drop_malformed_nbgrader(nb: nbformat.NotebookNode) -> None:
    """Remove nbgrader metadata that is not a mapping with a string grade_id (the grader keys cells
    by grade_id; a list or number there is no cell of the lab, only a way to crash the grader)."""
    for cell in nb.cells:
        meta = cell.get("metadata", {})
        if "nbgrader" in meta and (
            not isinstance(meta["nbgrader"], dict)
            or not isinstance(meta["nbgrader"].get("grade_id", ""), str)
        ):
            del meta["nbgrader"]


def collect(root: Path, chapters: dict[str, set[str]]) -> Collected:
    """Submissions under ``root`` for the given chapters (chapter -> lab notebook names)."""
    found = Collected()
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if entry.name.startswith(".") or not (entry.is_symlink() or entry.is_dir(follow_symlinks=False)):
            continue
        if not SAFE_NAME.match(entry.name):
            found.rejected.append(
                f"{root / plain(entry.name)}: refused student folder name (use letters, digits, . _ @ + -)"
            )
            continue
        try:
            _collect_student(root / entry.name, chapters, found)
        except OSError as err:
            found.rejected.append(f"{root / entry.name}: cannot read ({os.strerror(err.errno or 0)})")
    return found


def _collect_student(student_dir: Path, chapters: dict[str, set[str]], found: Collected) -> None:
    """The submissions of one student folder; a link where a folder should be refuses them all."""
    for chapter, labs in sorted(chapters.items()):
        problem = _not_a_folder(student_dir) or _not_a_folder(student_dir / chapter)
        if problem is None and not os.path.lexists(student_dir / chapter):
            continue
        if problem:
            found.submissions += [
                _refused(student_dir.name, chapter, student_dir / chapter / n, problem) for n in sorted(labs)
            ]
            continue
        for name in sorted(labs):
            if os.path.lexists(student_dir / chapter / name):
                found.submissions.append(_read(student_dir.name, chapter, student_dir / chapter / name))
        found.rejected += [
            f"{student_dir / chapter / plain(e.name)}: not a lab of {chapter} "
            f"(expected {', '.join(sorted(labs))})"
            for e in sorted(os.scandir(student_dir / chapter), key=lambda e: e.name)
            if e.name.endswith(".ipynb") and e.name not in labs
        ]


def _not_a_folder(path: Path) -> str | None:
    """Why ``path`` cannot be a submission folder (``bad file: ...``), or None (a folder, or absent)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        return f"bad file: {path}: {SYMLINK}"
    return None if stat.S_ISDIR(mode) else f"bad file: {path}: not a folder"


def _refused(student: str, chapter: str, path: Path, error: str) -> Submission:
    return Submission(student, chapter, path.stem, path, None, error)


def _read(student: str, chapter: str, path: Path) -> Submission:
    nb, error = read_notebook(path)
    return Submission(student, chapter, path.stem, path, nb, error)


def matches_lab(nb: nbformat.NotebookNode, lab_grade_ids: set[str]) -> bool:
    """True when the notebook carries at least one of the lab's graded cells (right chapter)."""
    ids = {
        meta.get("grade_id")
        for c in nb.cells
        if isinstance(meta := c.get("metadata", {}).get("nbgrader", {}), dict)
        and isinstance(meta.get("grade_id"), str)
    }
    return bool(ids & lab_grade_ids)
