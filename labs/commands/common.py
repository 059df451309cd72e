"""What several commands share: their option types, the chapters and device they name, nbgrader's quiet.

Nothing here imports torch or nbgrader when the module loads: each helper imports what it needs when called.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer

from graders import paths as defaults
from labs.console import console, err_console, fail, printable
from labs.options import resolve_device

PathsArg = Annotated[list[Path] | None, typer.Argument(help="notebooks or folders (default: course/)")]
ChaptersArg = Annotated[
    list[str] | None, typer.Argument(help="chapter names or folders (default: every chapter)")
]
ChapterOpt = Annotated[list[str] | None, typer.Option("--chapter", help="chapters (default: all)")]
CourseOpt = Annotated[Path, typer.Option("--course", help="nbgrader source folder holding the chapters")]
ExercisesOpt = Annotated[
    list[str] | None, typer.Option("--exercise", "-e", help="an exercise name (repeat; default: double)")
]
WrongDirOpt = Annotated[Path, typer.Option("--wrong-solutions", help="folder of <chapter>/<grade_id>__*.py")]
RightDirOpt = Annotated[
    Path,
    typer.Option(
        "--right-solutions",
        help="folder of <chapter>/<grade_id>__*.py: other correct solutions, each must earn full marks",
    ),
]
WorkspaceOpt = Annotated[
    Path, typer.Option("--workspace", help="the student's folder; existing files are kept")
]
RootOpt = Annotated[
    Path,
    typer.Option("--root", help="the course's nbgrader folder (release, gradebook, submissions, feedback)"),
]
DbOpt = Annotated[
    str | None, typer.Option("--db", help="SQLAlchemy URL of the gradebook (default: SQLite in --root)")
]
ExchangeRootOpt = Annotated[
    Path, typer.Option("--exchange-root", help="nbgrader's exchange folder (labs hub's)")
]
DEFAULT_PATHS = [defaults.COURSE]
DEFAULT_EXCHANGE = defaults.EXCHANGE


def quiet_nbgrader() -> None:
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's own session bookkeeping noise


def chapter_folders(names: list[str] | None, course: Path, with_labs: bool = False) -> list[Path]:
    """The chapter folders the command line names (every chapter when none); a bad name fails the command."""
    from graders import coursedir

    try:
        return (
            coursedir.chapters_with_labs(names, course)
            if with_labs
            else coursedir.resolve_chapters(names, course)
        )
    except coursedir.LayoutError as err:
        fail(str(err))


def checked_device(name: str) -> str:
    """``--device`` as notebooks get it; an unknown name or a missing CUDA fails the command."""
    try:
        return resolve_device(name)
    except ValueError:
        fail(f"unknown --device {name!r}: choose auto, cpu or cuda")
    except RuntimeError:
        fail(
            "--device cuda requested but CUDA is not available on this machine (torch.cuda.is_available() is False)"
        )


def isolation_warning() -> None:
    """Say on stderr how much less the sandbox isolates here, if it does."""
    from graders.grader.sandbox.worker import isolation_warning as warning_for

    warning = warning_for(True)
    if warning:
        err_console.print(warning, style="yellow", soft_wrap=True)


def release_to_workspace(folders: list[Path], root: Path, workspace: Path, db: str | None = None) -> None:
    """Release ``folders`` into ``workspace`` (`labs release`, and `labs lab`, which releases first) and say what
    it did; a failed release is a one-line error."""
    from labs.lab import release_workspace

    try:
        released, sync, kept = release_workspace(folders, root, workspace, db)
    except RuntimeError as err:
        fail(str(err))
    console.print(f"released {len(folders)} chapter{'s' * (len(folders) != 1)} into {released}")
    for chapter in kept:
        console.print(
            f"{chapter}: submissions of it are graded, so the gradebook keeps its labs' points as graded "
            "(an edited lab reaches students; labs grade refuses a lab whose points moved)"
        )
    console.print(
        f"workspace {workspace}: {len(sync.added)} new files, {len(sync.kept)} kept as the student left them"
    )


def written(summary: str, errors: list[str]) -> None:
    """Each file that failed, one line each, then the summary; exit 1 when any failed."""
    for line in errors:
        err_console.print(printable(line), soft_wrap=True)
    console.print(summary + (f", {len(errors)} failed" if errors else ""))
    raise typer.Exit(1 if errors else 0)
