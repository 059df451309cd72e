"""Instructor commands of `labs`: check (lab self-check) and release (student notebooks)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy.exc import SAWarning

from graders.release import build_release, sync_workspace
from graders.sandbox import isolation_warning
from graders.selfcheck import ChapterCheck, Standard, check_chapters

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False)

ChaptersArg = Annotated[list[str] | None, typer.Argument(help="chapter names or folders (default: every chapter)")]
CourseOpt = Annotated[Path, typer.Option("--course", help="nbgrader source folder holding the chapters")]


def resolve_chapters(names: list[str] | None, course_dir: Path) -> list[Path]:
    """Chapter folders from names (``01_autograd``) or paths; every chapter when none given."""
    if not course_dir.is_dir() and not names:
        _fail(f"{course_dir}: no such course folder")
    if not names:
        return sorted(p for p in course_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    folders = []
    for name in names:
        folder = Path(name) if Path(name).is_dir() else course_dir / name
        if not folder.is_dir():
            _fail(f"{name}: no such chapter (looked for {folder})")
        folders.append(folder)
    return folders


def _fail(message: str) -> None:
    err_console.print(f"error: {message}", soft_wrap=True)
    raise typer.Exit(2)


def check(
    chapters: ChaptersArg = None,
    course_dir: CourseOpt = Path("course"),
    wrong_dir: Annotated[Path, typer.Option("--wrong-solutions", help="folder of <chapter>/<grade_id>__*.py")] = Path(
        "tests/wrong_solutions"),
    right_dir: Annotated[Path, typer.Option("--right-solutions", help="folder of <chapter>/<grade_id>__*.py: other "
                                            "correct solutions, each must earn full marks")] = Path("tests/right_solutions"),
    build: Annotated[Path, typer.Option(help="scratch nbgrader courses")] = Path("build/check"),
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="sandboxes in parallel")] = 2,
    min_exercises: Annotated[int, typer.Option(help="graded exercises every lab must have")] = Standard.exercises,
    min_points: Annotated[float, typer.Option(help="points every lab must be worth")] = Standard.points,
    min_wrong: Annotated[int, typer.Option(help="wrong solutions every exercise must have")] = Standard.wrong_per_exercise,
) -> None:
    """Lab self-check, graded like `labs grade`: source = full, release = zero, wrong solutions lose, right ones earn."""
    folders = [f for f in resolve_chapters(chapters, course_dir) if chapters or any(f.glob("lab_*.ipynb"))]
    if not folders:
        _fail(f"no chapter with a lab_*.ipynb under {course_dir}")
    if jobs < 1:
        _fail("--jobs must be at least 1")
    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's own session bookkeeping noise
    warning = isolation_warning(True)
    if warning:
        err_console.print(warning, style="yellow", soft_wrap=True)
    standard = Standard(min_exercises, min_points, min_wrong)
    results = check_chapters(folders, build.resolve(), wrong_dir.resolve(), jobs, standard, right_dir.resolve())
    for result in results:
        _print_chapter(result)
    ok = all(r.ok for r in results)
    console.print(f"{sum(r.ok for r in results)}/{len(results)} chapters pass the self-check",
                  style="green" if ok else "red")
    raise typer.Exit(0 if ok else 1)


def _print_chapter(result: ChapterCheck) -> None:
    """The chapter's verdicts as a table, then each failure, warning and shortfall in full, one line each."""
    if result.error:
        console.print(f"[red]FAIL[/] {escape(result.error)}", soft_wrap=True)
        return
    table = Table(title=f"labs check {result.chapter}")
    for column in ("lab", "version", "expected", "points", "per cell", "verdict"):
        table.add_column(column, overflow="fold")
    for v in result.verdicts:
        per_cell = ", ".join(f"{c.grade_id} {c.score:g}/{c.points:g}" for c in v.cells)
        table.add_row(v.lab, v.version, v.expectation, f"{v.score:g}/{v.max_score:g}", per_cell,
                      "[green]ok[/]" if v.ok else "[red]FAIL[/] (below)")
    console.print(table)
    for v in result.verdicts:
        if not v.ok:
            console.print(f"[red]FAIL[/] {escape(v.lab)} {escape(v.version)}: {escape(v.note)}", soft_wrap=True)
        for line in v.warnings:  # the lab passes, but this is worth a look
            console.print(f"[yellow]warning[/] {escape(v.lab)}: {escape(line)}", soft_wrap=True)
    for line in result.shortfalls:  # below the course standard, or a wrong solution nothing uses
        console.print(f"[red]FAIL[/] {escape(line)}", soft_wrap=True)


WorkspaceOpt = Annotated[Path, typer.Option("--workspace", help="the student's folder; existing files are kept")]


def release(
    chapters: ChaptersArg = None,
    course_dir: CourseOpt = Path("course"),
    build: Annotated[Path, typer.Option(help="nbgrader course folder for the release")] = Path("build/nbgrader"),
    workspace: WorkspaceOpt = Path("student"),
) -> None:
    """Build student (solution-free) notebooks with nbgrader and add new ones to the workspace."""
    folders = resolve_chapters(chapters, course_dir)
    try:
        released = build_release(folders, build.resolve())
    except RuntimeError as err:
        _fail(str(err))
    sync = sync_workspace(released, workspace)
    console.print(f"released {len(folders)} chapters into {released}")
    console.print(f"workspace {workspace}: {len(sync.added)} new files, {len(sync.kept)} kept as the student left them")


def lab(
    port: Annotated[int, typer.Option(help="port on 127.0.0.1")] = 8888,
    token: Annotated[str | None, typer.Option(help="access token (default: random, printed)")] = None,
    workspace: WorkspaceOpt = Path("student"),
    course_dir: CourseOpt = Path("course"),
    open_browser: Annotated[bool, typer.Option("--browser/--no-browser")] = True,
    build: Annotated[Path, typer.Option(help="nbgrader course folder for the release")] = Path("build/nbgrader"),
) -> None:
    """Release the student notebooks and start JupyterLab on them (127.0.0.1, token auth on)."""
    release(None, course_dir, build, workspace)
    token = token or secrets.token_hex(16)
    args = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={workspace.resolve()}",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}", f"--ServerApp.open_browser={open_browser}",
            # students get the assignment tools, not the instructor's formgrader
            '--ServerApp.jpserver_extensions={"nbgrader.server_extensions.formgrader": False}']
    if os.getuid() == 0:  # containers and CI runners often run as root
        args.append("--ServerApp.allow_root=True")
    env = os.environ | {"JUPYTER_CONFIG_PATH": os.pathsep.join(
        filter(None, [str(_student_page_config(build.resolve())), os.environ.get("JUPYTER_CONFIG_PATH")]))}
    server = subprocess.Popen(args, env=env)
    try:
        if _listening(server, port):
            console.print(f"JupyterLab: http://127.0.0.1:{port}/lab?token={token}")
        raise typer.Exit(server.wait())
    except KeyboardInterrupt:  # Ctrl-C reached the server too: let it shut down cleanly
        raise typer.Exit(server.wait()) from None


# What a student's JupyterLab leaves out: nbgrader's instructor panels and JupyterLab's news prompt.
STUDENT_DISABLED_PLUGINS = ["@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:formgrader",
                            "@jupyter/nbgrader:course-list", "@jupyterlab/apputils-extension:announcements"]


def _student_page_config(build: Path) -> Path:
    """A Jupyter config folder whose labconfig disables the instructor's plugins (on JUPYTER_CONFIG_PATH)."""
    folder = build / "student-jupyter-config"
    (folder / "labconfig").mkdir(parents=True, exist_ok=True)
    page = {"disabledExtensions": dict.fromkeys(STUDENT_DISABLED_PLUGINS, True)}
    (folder / "labconfig" / "page_config.json").write_text(json.dumps(page, indent=2), encoding="utf-8")
    return folder


def _listening(server: subprocess.Popen, port: int, timeout: float = 120) -> bool:
    """Wait until the server accepts connections on ``port`` (False if it exited or never did)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False
