"""Student notebooks: nbgrader's release version of each chapter, and a workspace that keeps edits."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from graders.nbgrader import nbgrader_course as course


@dataclass
class WorkspaceSync:
    """What syncing a release into a student's workspace did, file by file."""

    added: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)


def build_release(chapters: list[Path], root: Path) -> Path:
    """Run nbgrader generate_assignment for each chapter; returns ``root/release``."""
    api = course.api(root)
    for chapter in chapters:
        notebooks = sorted(chapter.glob("*.ipynb"))
        course.stage_source(root, chapter.name, notebooks)
        course.require_success(api.generate_assignment(chapter.name), f"generate_assignment {chapter.name}")
    return root / "release"


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
