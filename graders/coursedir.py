"""The course's layout, in one place: chapters, labs, probe files, solution folders, nbgrader markers.

::

    course/                      nbgrader's source folder
      NN_topic/                  a chapter = one nbgrader assignment (the folder name is its id)
        1_lesson.ipynb ...       lessons, in reading order
        lab_topic.ipynb          the graded lab(s): lab_*.ipynb
        probes/lab_topic.py      the lab's hidden probes (never released)
    tests/wrong_solutions/NN_topic/<grade_id>__<slug>.py    must lose points
    tests/right_solutions/NN_topic/<grade_id>__<slug>.py    must earn full marks

Inside a lab, nbgrader's markers delimit what a release removes: solutions and hidden tests.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

LAB_PATTERN = "lab_*.ipynb"
PROBES_FOLDER = "probes"
SOLUTION_FILE_PATTERN = "*__*.py"

SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
# A solution region with the indentation of its first marker (group 1) and its body (group 2).
SOLUTION_REGION = re.compile(
    r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n?(.*?)^[ \t]*### END SOLUTION[ \t]*$", re.S | re.M
)
HIDDEN_BLOCK = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[ \t]*\n?", re.S | re.M
)


class LayoutError(ValueError):
    """A path that is not where the course layout says it should be; the message names it."""


def is_lab(path: Path) -> bool:
    """Labs are the nbgrader-graded notebooks: ``lab_*.ipynb``."""
    return path.match(LAB_PATTERN)


def labs_in(chapter: Path) -> list[Path]:
    """The chapter's labs, sorted by name."""
    return sorted(chapter.glob(LAB_PATTERN))


def chapter_of(notebook: Path) -> str:
    """The chapter (nbgrader assignment id) a notebook belongs to: its folder's name."""
    return notebook.parent.name


def probes_file(lab: Path) -> Path:
    """Where a lab's probes live: ``<chapter>/probes/<lab stem>.py``."""
    return lab.parent / PROBES_FOLDER / f"{lab.stem}.py"


def chapters(course: Path) -> list[Path]:
    """Every chapter folder of the course, sorted (hidden folders are not chapters)."""
    return sorted(p for p in course.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def resolve_chapters(names: list[str] | None, course: Path) -> list[Path]:
    """Chapter folders from names (``01_autograd``) or paths; every chapter when none are given."""
    if not names:
        if not course.is_dir():
            raise LayoutError(f"{course}: no such course folder")
        return chapters(course)
    folders = []
    for name in names:
        folder = Path(name) if Path(name).is_dir() else course / name
        if not folder.is_dir():
            raise LayoutError(f"{name}: no such chapter (looked for {folder})")
        folders.append(folder)
    return folders


def chapters_with_labs(names: list[str] | None, course: Path) -> list[Path]:
    """:func:`resolve_chapters`, keeping only chapters that have a lab; LayoutError when none has."""
    folders = [folder for folder in resolve_chapters(names, course) if labs_in(folder)]
    if not folders:
        raise LayoutError(f"no chapter with a {LAB_PATTERN} under {course}")
    return folders


def solution_files(root: Path, chapter: str) -> list[tuple[str, Path]]:
    """``(solution grade_id, file)`` for each ``<grade_id>__<slug>.py`` under ``root/chapter``."""
    folder = root / chapter
    return (
        [(p.stem.split("__")[0], p) for p in sorted(folder.glob(SOLUTION_FILE_PATTERN))]
        if folder.is_dir()
        else []
    )


def nbgrader_meta(cell: dict[str, Any]) -> dict[str, Any]:
    """The cell's nbgrader metadata, ``{}`` when absent or malformed."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def visible_part(source: str) -> str:
    """A test cell's source without its hidden-test blocks."""
    return HIDDEN_BLOCK.sub("", source)


def solution_bodies(source: str) -> list[str]:
    """The code between each pair of solution markers (as written, indentation kept)."""
    return [match.group(2) for match in SOLUTION_REGION.finditer(source)]


def without_solutions(source: str, replacement: str = "raise NotImplementedError()") -> str:
    """``source`` with each solution region replaced the way nbgrader's release does it."""
    return SOLUTION_REGION.sub(lambda m: f"{m.group(1)}{replacement}", source)
