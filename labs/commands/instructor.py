"""Instructor commands for a class's labs: `release`, `collect`, `salt` (docs/grading.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from graders import paths as defaults
from labs.commands.common import (
    DEFAULT_EXCHANGE,
    ChaptersArg,
    CourseOpt,
    DbOpt,
    ExchangeRootOpt,
    RootOpt,
    WorkspaceOpt,
    chapter_folders,
    release_to_workspace,
)
from labs.console import console, fail


def release(
    chapters: ChaptersArg = None,
    course_dir: CourseOpt = defaults.COURSE,
    root: RootOpt = defaults.GRADING_ROOT,
    db: DbOpt = None,
    workspace: WorkspaceOpt = defaults.STUDENT_WORKSPACE,
    exchange: Annotated[
        bool,
        typer.Option(
            "--exchange",
            help="also put each chapter's lab in nbgrader's "
            "exchange (students fetch it in the Assignments tab)",
        ),
    ] = False,
    exchange_root: ExchangeRootOpt = DEFAULT_EXCHANGE,
) -> None:
    """Build student (solution-free) notebooks with nbgrader and add new ones to the workspace."""
    from graders.nbgrader.exchange import release_chapters

    folders = chapter_folders(chapters, course_dir)
    release_to_workspace(folders, root, workspace, db)
    try:
        for chapter, labs, outbound in release_chapters(
            root.resolve(), folders if exchange else [], exchange_root.resolve()
        ):
            console.print(f"released {chapter} ({', '.join(labs) or 'no lab'}) to the exchange: {outbound}")
    except RuntimeError as err:
        fail(str(err))


def collect(
    chapters: Annotated[list[str], typer.Argument(help="chapters to collect")],
    course_dir: CourseOpt = defaults.COURSE,
    root: RootOpt = defaults.GRADING_ROOT,
    exchange_root: ExchangeRootOpt = DEFAULT_EXCHANGE,
    owner_check: Annotated[
        bool,
        typer.Option(
            help="collect only submissions owned by the unix user of the "
            "student they name (off only for labs hub --demo, where "
            "one unix user runs every server)"
        ),
    ] = True,
) -> None:
    """Collect each student's latest submission from the exchange into ROOT/submitted (for labs grade)."""
    from graders.nbgrader.course_root import CourseRoot
    from graders.nbgrader.exchange import collect_chapters

    folders = chapter_folders(chapters, course_dir, with_labs=True)
    submitted = CourseRoot(root).submitted
    try:
        for chapter, found in collect_chapters(root.resolve(), folders, exchange_root.resolve(), owner_check):
            for name, why in sorted(found.refused.items()):
                console.print(f"refused {name}: {why}", style="red", markup=False)
            for student, path in found.folders.items():
                console.print(f"collected {student}/{chapter}: {path}")
            console.print(
                f"{len(found.folders)} submissions of {chapter} in {submitted} "
                f"(next: labs grade {submitted} --chapter {chapter})"
            )
    except RuntimeError as err:
        fail(str(err))


def salt(
    chapter: Annotated[str, typer.Argument(help="the chapter whose salt to show or rotate, e.g. 02_tensors")],
    root: RootOpt = defaults.GRADING_ROOT,
    salts: Annotated[
        Path | None, typer.Option(help="folder of the class's salts (default: ROOT/salts)")
    ] = None,
    rotate: Annotated[
        bool,
        typer.Option(
            "--rotate",
            help="make a new salt: every later run draws new inputs (recorded in the folder's rotations.log)",
        ),
    ] = False,
) -> None:
    """Show a chapter's salt fingerprint, or rotate the salt (the inputs every grading of the chapter draws)."""
    from graders.grader import salts as class_salts
    from graders.nbgrader.course_root import CourseRoot

    folder = salts or CourseRoot(root).salts
    try:
        kept = class_salts.kept_salt(folder, chapter)
        if kept is None:
            fail(f"{folder}: no salt for {chapter} yet (it is made on the chapter's first labs grade)")
        if rotate:
            old, new = class_salts.rotate(folder, chapter)
            was = class_salts.fingerprint(old) if old is not None else "none"
            console.print(
                f"{chapter}: salt rotated ({was} -> {class_salts.fingerprint(new)}); later runs draw new inputs"
            )
        else:
            console.print(f"{chapter}: salt {class_salts.fingerprint(kept)}")
    except (OSError, ValueError) as err:
        fail(f"{folder}: {err}")
