"""The students' commands: `labs lab` (their notebooks in JupyterLab) and `labs check-lab` (a self-learner's lab
graded alone, as a class is graded)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated

import typer

from graders import paths as defaults
from graders.boundary.protocol import Limits
from labs.commands.common import (
    CourseOpt,
    RootOpt,
    WorkspaceOpt,
    chapter_folders,
    isolation_warning,
    quiet_nbgrader,
    release_to_workspace,
)
from labs.console import console, fail


def lab(
    port: Annotated[int, typer.Option(help="port on 127.0.0.1")] = 8888,
    token: Annotated[str | None, typer.Option(help="access token (default: random, printed)")] = None,
    workspace: WorkspaceOpt = defaults.STUDENT_WORKSPACE,
    course_dir: CourseOpt = defaults.COURSE,
    open_browser: Annotated[bool, typer.Option("--browser/--no-browser")] = True,
    root: RootOpt = defaults.GRADING_ROOT,
) -> None:
    """Release the student notebooks and start JupyterLab on them (127.0.0.1, token auth on)."""
    from labs.lab import run_lab

    folders = chapter_folders(None, course_dir)
    release_to_workspace(folders, root, workspace)
    token = token or secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}/lab?token={token}"
    raise typer.Exit(
        run_lab(workspace, port, token, open_browser, root, lambda: console.print(f"JupyterLab: {url}"))
    )


def check_lab(
    notebook: Annotated[Path, typer.Argument(help="your lab, e.g. student/03_modules/lab_modules.ipynb")],
    course_dir: CourseOpt = defaults.COURSE,
    timeout: Annotated[
        float, typer.Option(help="wall-clock seconds for your notebook")
    ] = Limits().wall_seconds,
) -> None:
    """Self-learners: grade your lab with the hidden checks, in the sandbox, and see what a graded student sees."""
    from graders.pipeline import BadRequest
    from labs.check_lab import NotALab, print_lab_check
    from labs.check_lab import check_lab as grade_alone

    if timeout <= 0:
        fail("--timeout must be positive")
    quiet_nbgrader()
    isolation_warning()
    try:
        result = grade_alone(notebook, course_dir, defaults.BUILD, timeout)
    except (NotALab, BadRequest) as err:
        fail(str(err))
    print_lab_check(result)
    raise typer.Exit(0 if result.status == "graded" and result.score == result.max_score else 1)
