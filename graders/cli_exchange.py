"""`labs release --exchange`, `labs collect`, `labs feedback --release`: the class on JupyterHub (`labs hub`).

Each wraps the command it extends (`labs release`, `labs feedback`) and then runs the exchange step of
graders/exchange.py, so the commands without the new options behave exactly as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from graders import cli as graders_cli
from graders import cli_grade
from graders import exchange as ex
from graders.cli import ChaptersArg, CourseOpt, WorkspaceOpt, _fail, console, resolve_chapters
from graders.cli_grade import DbOpt, RootOpt

ExchangeRootOpt = Annotated[Path, typer.Option("--exchange-root", help="nbgrader's exchange folder (labs hub's)")]


def release(
    chapters: ChaptersArg = None,
    course_dir: CourseOpt = Path("course"),
    build: Annotated[Path, typer.Option(help="nbgrader course folder for the release")] = Path("build/nbgrader"),
    workspace: WorkspaceOpt = Path("student"),
    exchange: Annotated[bool, typer.Option("--exchange", help="also release to nbgrader's exchange "
                                           "(students fetch it in the Assignments tab)")] = False,
    exchange_root: ExchangeRootOpt = ex.DEFAULT_EXCHANGE,
) -> None:
    """Build student (solution-free) notebooks with nbgrader and add new ones to the workspace."""
    graders_cli.release(chapters, course_dir, build, workspace)
    if not exchange:
        return
    for folder in resolve_chapters(chapters, course_dir):
        labs = sorted(p.name for p in folder.glob("lab_*.ipynb"))
        try:
            outbound = ex.release_assignment(build.resolve(), folder.name, exchange_root.resolve(), labs)
        except RuntimeError as err:
            _fail(str(err))
        console.print(f"released {folder.name} ({', '.join(labs) or 'no lab'}) to the exchange: {outbound}")


def collect(
    chapters: Annotated[list[str], typer.Argument(help="chapters to collect")],
    course_dir: CourseOpt = Path("course"),
    root: RootOpt = Path("build/grading"),
    exchange_root: ExchangeRootOpt = ex.DEFAULT_EXCHANGE,
) -> None:
    """Collect each student's latest submission from the exchange into ROOT/submitted (for labs grade)."""
    for folder in resolve_chapters(chapters, course_dir):
        labs = sorted(p.name for p in folder.glob("lab_*.ipynb"))
        if not labs:
            _fail(f"{folder}: no lab_*.ipynb to collect")
        try:
            found = ex.collect(root.resolve(), folder.name, exchange_root.resolve(), labs)
        except RuntimeError as err:
            _fail(str(err))
        for student, path in found.folders.items():
            console.print(f"collected {student}/{folder.name}: {path}")
        console.print(f"{len(found.folders)} submissions of {folder.name} in {root / 'submitted'} "
                      f"(next: labs grade {root / 'submitted'} --chapter {folder.name})")


def feedback(
    chapter: Annotated[list[str] | None, typer.Option("--chapter")] = None,
    student: Annotated[str | None, typer.Option(help="one student (default: all graded)")] = None,
    course_dir: CourseOpt = Path("course"),
    root: RootOpt = Path("build/grading"),
    db: DbOpt = None,
    release_to: Annotated[bool, typer.Option("--release", help="also release it to the exchange "
                                             "(students fetch it in the Assignments tab)")] = False,
    exchange_root: ExchangeRootOpt = ex.DEFAULT_EXCHANGE,
) -> None:
    """Render nbgrader feedback (HTML) for graded submissions: scores and why, no hidden tests."""
    try:
        cli_grade.feedback(chapter, student, course_dir, root, db)
        code = 0
    except typer.Exit as done:
        code = done.exit_code
    if release_to and code in (0, 1):  # 1: some student's feedback failed, the others were rendered
        for folder in resolve_chapters(chapter, course_dir):
            try:
                students = ex.release_feedback(root.resolve(), folder.name, exchange_root.resolve())
            except RuntimeError as err:
                _fail(str(err))
            if students:
                console.print(f"released feedback on {folder.name} to {', '.join(students)}")
    raise typer.Exit(code)
