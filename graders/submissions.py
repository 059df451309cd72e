"""Collect submissions in nbgrader's layout (``<student>/<chapter>/<notebook>.ipynb``, a folder or a
zip of one) and read each notebook defensively: one bad file is one error, never a stopped batch."""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

MAX_NOTEBOOK_BYTES = 20 << 20
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")


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


def unpack(archive: Path, into: Path) -> list[str]:
    """Extract a zip of submissions into ``into``; returns one error line per refused entry."""
    errors = []
    with zipfile.ZipFile(archive) as zipped:
        for info in zipped.infolist():
            name = info.filename
            parts = Path(name).parts
            if info.is_dir():
                continue
            if name.startswith("/") or ".." in parts or not all(SAFE_NAME.match(p) for p in parts):
                errors.append(f"{archive}: {name!r}: refused (unsafe or non-ASCII path)")
                continue
            if info.file_size > MAX_NOTEBOOK_BYTES:
                errors.append(f"{archive}: {name}: {info.file_size >> 20} MiB is over the {MAX_NOTEBOOK_BYTES >> 20} MiB limit")
                continue
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zipped.read(info))
    return errors


def read_notebook(path: Path) -> tuple[nbformat.NotebookNode | None, str]:
    """The notebook at ``path``, or None and a one-line reason."""
    size = path.stat().st_size
    if size == 0:
        return None, f"{path}: empty file"
    if size > MAX_NOTEBOOK_BYTES:
        return None, f"{path}: {size >> 20} MiB is over the {MAX_NOTEBOOK_BYTES >> 20} MiB limit"
    try:
        text = path.read_bytes().decode("utf-8")
        data = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        return None, f"{path}: not a notebook (invalid JSON: {str(err).splitlines()[0][:120]})"
    if not isinstance(data, dict) or data.get("nbformat") != 4:
        return None, f"{path}: unsupported notebook format (nbformat {data.get('nbformat') if isinstance(data, dict) else '?'}; need 4)"
    try:
        nb = nbformat.reads(text, as_version=4)  # also joins sources stored as lists of lines
        nbformat.validate(nb)
    except Exception as err:  # noqa: BLE001 - nbformat raises several kinds of validation errors
        return None, f"{path}: invalid notebook ({str(err).splitlines()[0][:160]})"
    return nb, ""


def collect(root: Path, chapters: dict[str, set[str]]) -> Collected:
    """Submissions under ``root`` for the given chapters (chapter -> lab notebook names)."""
    found = Collected()
    for student_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not SAFE_NAME.match(student_dir.name):
            found.rejected.append(f"{student_dir}: refused student folder name (use letters, digits, . _ @ + -)")
            continue
        for chapter, labs in sorted(chapters.items()):
            for name in sorted(labs):
                path = student_dir / chapter / name
                if path.exists():
                    found.submissions.append(_read(student_dir.name, chapter, path))
            extra = sorted(p.name for p in (student_dir / chapter).glob("*.ipynb") if p.name not in labs) \
                if (student_dir / chapter).is_dir() else []
            found.rejected += [f"{student_dir / chapter / e}: not a lab of {chapter} (expected {', '.join(sorted(labs))})"
                               for e in extra]
    return found


def _read(student: str, chapter: str, path: Path) -> Submission:
    nb, error = read_notebook(path)
    return Submission(student, chapter, path.stem, path, nb, error)


def matches_lab(nb: nbformat.NotebookNode, lab_grade_ids: set[str]) -> bool:
    """True when the notebook carries at least one of the lab's graded cells (right chapter)."""
    ids = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in nb.cells
           if isinstance(c.get("metadata", {}).get("nbgrader", {}), dict)}
    return bool(ids & lab_grade_ids)
