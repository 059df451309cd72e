"""The `labs` command: lint, run and check notebooks; release and grade labs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ci import hub, report, timings
from ci import lint as lint_rules
from ci.notebooks import BadInput, discover, read
from graders import cli as graders_cli
from graders import cli_exchange, cli_grade
from graders.gradebook_course import ensure_tools_on_path

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="PyTorch Labs: lint, run and check the course notebooks; release and grade labs.")
console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False)

DEFAULT_PATHS = [Path("course")]
PathsArg = Annotated[list[Path] | None, typer.Argument(help="notebooks or folders (default: course/)")]


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit code 2, no traceback."""
    err_console.print(f"error: {message}", soft_wrap=True)
    raise typer.Exit(2)


new_app = typer.Typer(no_args_is_help=True, help="Scaffold a chapter or a lab that follows docs/authoring.md.")
app.add_typer(new_app, name="new")
ExercisesOpt = Annotated[list[str] | None, typer.Option("--exercise", "-e", help="an exercise name (repeat; default: double)")]
WrongDirOpt = Annotated[Path, typer.Option("--wrong-solutions", help="folder of <chapter>/<grade_id>__*.py")]


@new_app.command("chapter")
def new_chapter(name: Annotated[str, typer.Argument(help="NN_topic, e.g. 06_tricks")],
                exercise: ExercisesOpt = None, course_dir: Annotated[Path, typer.Option("--course")] = Path("course"),
                wrong_dir: WrongDirOpt = Path("tests/wrong_solutions")) -> None:
    """A chapter folder with a lesson and a lab (lab_<topic>), its probes and wrong solutions."""
    from ci import scaffold

    try:
        written = scaffold.chapter_files(course_dir, wrong_dir, name, exercise or []).write()
    except scaffold.ScaffoldError as err:
        fail(str(err))
    _print_written(written)


@new_app.command("lab")
def new_lab(chapter: Annotated[str, typer.Argument(help="an existing chapter folder name")],
            name: Annotated[str, typer.Argument(help="the lab is lab_<name>.ipynb")],
            exercise: ExercisesOpt = None, course_dir: Annotated[Path, typer.Option("--course")] = Path("course"),
            wrong_dir: WrongDirOpt = Path("tests/wrong_solutions")) -> None:
    """A lab in an existing chapter, with a probe file and wrong solutions per exercise."""
    from ci import scaffold

    folder = course_dir / chapter
    if not folder.is_dir():
        fail(f"{folder}: no such chapter (create it with `labs new chapter {chapter}`)")
    try:
        written = scaffold.lab_files(folder, wrong_dir, name, exercise or []).write()
    except scaffold.ScaffoldError as err:
        fail(str(err))
    _print_written(written)


def _print_written(written: list[Path]) -> None:
    for path in written:
        console.print(f"created {path}")
    console.print("next: labs lint, labs run --smoke, labs check (docs/authoring.md)")


@app.command()
def lint(paths: PathsArg = None,
         fix: Annotated[bool, typer.Option("--fix", help="strip outputs and normalise metadata")] = False) -> None:
    """Check notebooks against the course conventions; print file:cell: message per problem."""
    try:
        notebooks = discover(paths or DEFAULT_PATHS)
    except BadInput as err:
        fail(str(err))
    if fix:
        for path in notebooks:
            try:
                if lint_rules.fix(path):
                    console.print(f"fixed {path}")
            except BadInput as err:
                console.print(str(err))
    problems = lint_rules.lint(notebooks)
    for problem in problems:
        console.print(str(problem), soft_wrap=True)
    console.print(f"{len(notebooks)} notebooks, {len(problems)} problems")
    raise typer.Exit(1 if problems else 0)


def _resolve_device(device: str) -> str:
    if device not in ("auto", "cpu", "cuda"):
        fail(f"unknown --device {device!r}: choose auto, cpu or cuda")
    if device == "cpu":
        return "cpu"
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        fail("--device cuda requested but CUDA is not available on this machine (torch.cuda.is_available() is False)")
    return "cuda" if torch.cuda.is_available() else "cpu"


def _display_name(path: Path) -> str:
    """A notebook's name in reports and timings: relative to the working folder when inside it."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return resolved.as_posix()


def _inside(folder: Path, name: str) -> Path:
    return folder / name.lstrip("/")


@app.command()
def run(
    paths: PathsArg = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="notebooks executed at once")] = 2,
    device: Annotated[str, typer.Option(help="auto, cpu or cuda (injected as DEVICE)")] = "auto",
    smoke: Annotated[bool, typer.Option("--smoke", help="inject SMOKE=True: tiny sizes")] = False,
    shard: Annotated[str | None, typer.Option(help="run only shard i/n, split by recorded duration")] = None,
    timeout: Annotated[float, typer.Option(help="seconds per notebook before its kernel is killed")] = 600,
    report_dir: Annotated[Path, typer.Option("--report", help="folder for executed notebooks and reports")] = Path(
        "build/report"),
    record_timings: Annotated[bool, typer.Option("--record-timings", help="write durations to the timings file")] = False,
    timings_file: Annotated[Path, typer.Option("--timings", help="recorded durations (for --shard)")] = (
        timings.TIMINGS_FILE),
    html: Annotated[bool, typer.Option("--html/--no-html", help="render the executed notebooks as a static site")] = False,
) -> None:
    """Execute notebooks with papermill, N at a time, and write report.json and junit.xml."""
    from ci.pool import run_all
    from ci.runner import RunSpec, kernel_env

    if jobs < 1:
        fail(f"--jobs must be at least 1, got {jobs}")
    if timeout <= 0:
        fail(f"--timeout must be positive, got {timeout:g}")
    try:
        notebooks = discover(paths or DEFAULT_PATHS)
        for path in notebooks:
            read(path)
        shard_spec = timings.parse_shard(shard) if shard else None
    except (BadInput, ValueError) as err:
        fail(str(err))
    if not notebooks:
        fail(f"no notebooks found under {', '.join(map(str, paths or DEFAULT_PATHS))}")
    resolved = _resolve_device(device)
    key = timings.mode_key(resolved, smoke)
    recorded = timings.load(timings_file)
    names = [_display_name(p) for p in notebooks]
    if shard_spec:
        names = timings.shard(names, recorded.get(key, {}), *shard_spec)
    ensure_tools_on_path()
    report_dir = report_dir.resolve()
    specs = [RunSpec(notebook=Path(n), output=_inside(report_dir / "notebooks", n), workdir=_inside(report_dir / "work", n),
                     device=resolved, smoke=smoke, timeout=timeout) for n in names]
    env = kernel_env(report_dir.parent / "cache", jobs)
    console.print(f"labs run: {len(specs)} notebooks, jobs={jobs}, device={resolved}, smoke={smoke}"
                  + (f", shard {shard}" if shard else ""))
    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("notebooks", total=len(specs))
        for result in run_all(specs, jobs, env):
            progress.advance(task)
            progress.console.print(f"{result.status:>7}  {result.seconds:6.1f}s  {result.notebook}")
            results.append(result)
    settings = {"device": resolved, "smoke": smoke, "jobs": jobs, "shard": shard, "timeout": timeout}
    report_dir.mkdir(parents=True, exist_ok=True)
    report.write_json(results, report_dir / "report.json", settings)
    report.write_junit(results, report_dir / "junit.xml")
    report.print_summary(results, console, resolved)
    console.print(f"report: {report_dir}/report.json, {report_dir}/junit.xml")
    if html:
        from ci.html import render_site

        console.print(f"static course: {render_site(results, report_dir)}")
    if record_timings:
        timings.record(recorded, key, {r.notebook: r.seconds for r in results if r.passed}, timings_file)
        console.print(f"timings recorded in {timings_file} under {key}")
    raise typer.Exit(0 if all(r.passed for r in results) else 1)


app.command("check")(graders_cli.check)
app.command("release")(cli_exchange.release)  # graders_cli.release, plus --exchange (labs hub)
app.command("lab")(graders_cli.lab)
app.command("grade")(cli_grade.grade)
app.command("feedback")(cli_exchange.feedback)  # cli_grade.feedback, plus --release (labs hub)
app.command("export")(cli_grade.export)
app.command("collect")(cli_exchange.collect)  # labs hub: submissions from nbgrader's exchange
app.command("hub")(hub.hub)  # labs hub: JupyterHub with an instructor and students


def main() -> None:
    """Entry point for ``python -m ci.cli``."""
    app()


if __name__ == "__main__":
    main()
