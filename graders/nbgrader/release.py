"""Student notebooks: nbgrader's student version of each chapter in the course's root, and a workspace that
keeps edits.

The one place generate_assignment runs (`labs release`, `labs grade` for a chapter its gradebook lacks, the
self-check's scratch course): every notebook of a chapter is generated into ``ROOT/release/<chapter>``, and the
labs alone are recorded in the gradebook (lessons are not graded: nbgrader's Assignments tab offers feedback only
on an assignment whose every notebook has some).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import MissingEntry

from graders.coursedir import LAB_PATTERN, is_lab
from graders.nbgrader import nbgrader_course as course
from graders.nbgrader.course_root import CourseRoot


@dataclass
class WorkspaceSync:
    """What syncing a release into a student's workspace did, file by file."""

    added: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)


def build_release(chapters: list[Path], root: CourseRoot) -> tuple[Path, list[str]]:
    """Each chapter's student notebooks (:func:`release_chapter`); returns ``ROOT/release`` and the chapters whose
    gradebook entry was kept as it was graded."""
    root.write_config()
    kept = [chapter.name for chapter in chapters if not release_chapter(root, chapter)]
    return root.release, kept


def release_chapter(root: CourseRoot, chapter: Path) -> bool:
    """Every notebook of ``chapter`` generated afresh into ``ROOT/release/<chapter>`` and its labs recorded in the
    gradebook, unless submissions of it were graded there: their points then stay as graded (False)."""
    notebooks = sorted(chapter.glob("*.ipynb"))
    course.stage_source(root.path, chapter.name, notebooks)
    every = course.api(root.path, root.db, record=False)
    course.require_success(
        every.generate_assignment(chapter.name, force=True), f"generate_assignment {chapter.name}"
    )
    if graded(root, chapter.name):
        return False
    labs = [n for n in notebooks if is_lab(n)]
    if labs:
        record_labs(root, chapter.name, labs)
    return True


def graded(root: CourseRoot, chapter: str) -> bool:
    """Whether the gradebook holds submissions of ``chapter``."""
    if not root.has_gradebook:
        return False
    with course.open_gradebook(root.db_url) as gradebook:
        try:
            return gradebook.find_assignment(chapter).num_submissions > 0
        except MissingEntry:
            return False


def record_labs(root: CourseRoot, chapter: str, labs: list[Path]) -> Path:
    """The ``labs`` of ``chapter`` generated into ``ROOT/release/<chapter>`` (its other notebooks left as they are)
    and recorded in the gradebook; returns that folder."""
    course.stage_source(root.path, chapter, labs, replacing=LAB_PATTERN)
    api = course.api(root.path, root.db)
    api.coursedir.notebook_id = LAB_PATTERN.removesuffix(".ipynb")
    course.require_success(api.generate_assignment(chapter, force=True), f"generate_assignment {chapter}")
    return root.release / chapter


def sync_workspace(release: Path, workspace: Path) -> WorkspaceSync:
    """Copy released files the student does not have yet; never overwrite a file that exists."""
    sync = WorkspaceSync()
    for source in sorted(p for p in release.rglob("*") if p.is_file()):
        target = workspace / source.relative_to(release)
        if target.exists():
            sync.kept.append(target)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        sync.added.append(target)
    return sync
