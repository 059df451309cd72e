"""`labs grade`, `labs feedback`, `labs export`: sandboxed grading on nbgrader's bookkeeping."""

from __future__ import annotations

import os
import re
import tempfile
import threading
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from graders.bookkeeping import (
    ensure_assignments,
    generate_feedback,
    mark_grader_error,
    reason,
    record,
    remove_autograded,
    write_autograded,
)
from graders.cli import CourseOpt, _fail, console, err_console, resolve_chapters
from graders.grading import Batch, Lab, NotebookGrade, grade_batch, load_lab
from graders.jail import Limits
from graders.reports import export_csv, export_gradescope, write_results, write_summary
from graders.sandbox import isolation_warning
from graders.submissions import Collected, Submission, collect, plain, unpack

RootOpt = Annotated[Path, typer.Option("--root", help="nbgrader course folder (gradebook, autograded, feedback)")]
DbOpt = Annotated[str | None, typer.Option("--db", help="SQLAlchemy URL of the gradebook (default: SQLite in --root)")]


def db_url_for(root: Path, db: str | None) -> str:
    """The gradebook URL: ``--db`` or SQLite under the course root."""
    return db or f"sqlite:///{root.resolve() / 'gradebook.db'}"


def parse_shard(spec: str | None) -> tuple[int, int]:
    """``"i/n"`` -> (i, n), 1 <= i <= n; exits 2 on anything else."""
    if spec is None:
        return 1, 1
    try:
        index, count = (int(x) for x in spec.split("/"))
    except ValueError:
        index = count = 0
    if not 1 <= index <= count:
        _fail(f"--shard {spec}: expected i/n with 1 <= i <= n")
    return index, count


def in_shard(subs: list[Submission], index: int, count: int) -> list[Submission]:
    """The submissions of every count-th student (sorted by name), so machines split the class."""
    students = sorted({s.student for s in subs})
    mine = {name for k, name in enumerate(students) if k % count == index - 1}
    return [s for s in subs if s.student in mine]


def load_labs(folders: list[Path]) -> tuple[dict[tuple[str, str], Lab], dict[str, list[Path]]]:
    """Every lab of the chapters, with probes; exits 2 with the file at fault otherwise."""
    labs, paths = {}, {}
    for folder in folders:
        paths[folder.name] = sorted(folder.glob("lab_*.ipynb"))
        for path in paths[folder.name]:
            try:
                labs[(folder.name, path.stem)] = load_lab(path)
            except (ValueError, SyntaxError, OSError) as err:
                _fail(str(err))
    return labs, paths


def gather(source: Path, chapters: dict[str, set[str]], scratch: Path) -> Collected:
    """Submissions from a folder or a zip of one."""
    if not source.exists():
        _fail(f"{source}: no such folder or zip")
    if source.is_file():
        try:
            rejected = unpack(source, scratch)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError):
            _fail(f"{source}: not a zip file")
        found = _collect(scratch, chapters)
        found.rejected = rejected + found.rejected
        return found
    return _collect(source, chapters)


def _collect(root: Path, chapters: dict[str, set[str]]) -> Collected:
    """collect(), exiting 2 with one line when the submissions folder itself cannot be read."""
    try:
        return collect(root, chapters)
    except OSError as err:
        _fail(f"{root}: cannot read ({os.strerror(err.errno or 0)})")
    raise AssertionError("unreachable")


SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.I)
SIZE_UNITS = {"": 2**20, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(text: str) -> int | None:
    """Bytes of a size as users type it (``2G``, ``512M``, ``1.5GiB``, ``4096`` = MiB); None if it is not one."""
    found = SIZE.match(text)
    return int(float(found[1]) * SIZE_UNITS[found[2].lower()]) if found else None


def grade(
    submissions: Annotated[Path, typer.Argument(help="folder <student>/<chapter>/<lab>.ipynb, or a zip of one")],
    chapter: Annotated[list[str] | None, typer.Option("--chapter", help="chapters to grade (default: all)")] = None,
    course_dir: CourseOpt = Path("course"),
    root: RootOpt = Path("build/grading"),
    db: DbOpt = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="sandboxes in parallel (default: cores)")] = 0,
    timeout: Annotated[float, typer.Option(help="wall-clock seconds per submission")] = 300,
    memory: Annotated[str, typer.Option(help="memory per submission: 4G, 512M, 1.5GiB (a bare number is MiB)")] = "4G",
    shard: Annotated[str | None, typer.Option(help="i/n: grade every n-th student, starting at the i-th")] = None,
    report: Annotated[Path | None, typer.Option(help="folder for results.json and summary.html (default: ROOT/reports)")] = None,
) -> None:
    """Grade submissions in sandboxes; scores go to the nbgrader gradebook."""
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's own session bookkeeping noise
    folders = resolve_chapters(chapter, course_dir)
    folders = [f for f in folders if any(f.glob("lab_*.ipynb"))]
    index, count = parse_shard(shard)
    memory_bytes = parse_size(memory)
    if memory_bytes is None:
        _fail(f"--memory: {memory!r} is not a size (write 4G, 512M or a number of MiB)")
    if jobs < 0 or timeout <= 0 or memory_bytes <= 0:
        _fail("--jobs, --timeout and --memory must be positive")
    labs, lab_paths = load_labs(folders)
    url = db_url_for(root, db)
    with tempfile.TemporaryDirectory(prefix="labs-grade-") as scratch:
        found = gather(submissions, {c: {f"{p.stem}.ipynb" for p in ps} for c, ps in lab_paths.items()}, Path(scratch))
        subs = in_shard(found.submissions, index, count)
        batch = _run(labs, subs, jobs or os.cpu_count() or 1, Limits(wall_seconds=timeout, memory_bytes=memory_bytes),
                     root.resolve(), lambda: _gradebook_ready(root.resolve(), url, labs, lab_paths))
    keep_books(root.resolve(), url, labs, batch, subs)
    out = report or root / "reports"
    out.mkdir(parents=True, exist_ok=True)
    problems = write_reports(batch, out)
    _print(batch, found.rejected, problems, out)
    raise typer.Exit(1 if found.rejected or problems or any(g.status != "graded" for g in batch.grades) else 0)


def keep_books(root: Path, url: str, labs: dict[tuple[str, str], Lab], batch: Batch, subs: list[Submission]) -> None:
    """Record every scored notebook in the gradebook and save its autograded copy; a failure is that
    notebook's ``grader error`` status (no autograded copy then), never the batch's."""
    scored = [g for g in batch.grades if g.cells]
    failures = record(url, scored)
    for grade, why in failures:
        mark_grader_error(grade, "recording in the gradebook of", why)
    failed = {id(g) for g, _ in failures}
    submitted = {(s.student, s.chapter, s.notebook): s.nb for s in subs}
    for grade in scored:
        try:
            if id(grade) in failed:
                remove_autograded(root, grade)
            else:
                write_autograded(root, labs[(grade.chapter, grade.notebook)], grade,
                                 submitted.get((grade.student, grade.chapter, grade.notebook)))
        except Exception as err:  # noqa: BLE001 - one notebook's feedback copy failing leaves the others
            mark_grader_error(grade, "writing the autograded notebook of", reason(err))


def write_reports(batch: Batch, out: Path) -> list[str]:
    """results.json and summary.html; returns a line per report that could not be written."""
    problems = []
    for name, write in (("results.json", write_results), ("summary.html", write_summary)):
        try:
            write(batch, out / name)
        except Exception as err:  # noqa: BLE001 - the other report and the gradebook still count
            problems.append(f"grader error: writing {out / name} failed ({reason(err)})")
    return problems


def _gradebook_ready(root: Path, url: str, labs: dict[tuple[str, str], Lab], lab_paths: dict[str, list[Path]]) -> None:
    try:
        ensure_assignments(root, url, labs, lab_paths)
    except Exception as err:  # noqa: BLE001 - a bad URL or server: one line, exit 2
        raise RuntimeError(f"gradebook {url}: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from err


def _run(labs: dict[tuple[str, str], Lab], subs: list[Submission], jobs: int, limits: Limits, root: Path,
         prepare: Callable[[], None]) -> Batch:
    warning = isolation_warning(True)
    if warning:
        err_console.print(warning, style="yellow", soft_wrap=True)
    lock = threading.Lock()
    with Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, disable=not err_console.is_terminal) as progress:
        task = progress.add_task("grade", total=len(subs))

        def done(_: NotebookGrade) -> None:
            with lock:
                progress.advance(task)

        try:
            return grade_batch(labs, subs, jobs, limits, True, root / "logs", done, prepare)
        except RuntimeError as err:
            _fail(str(err))
    raise AssertionError("unreachable")


def _print(batch: Batch, rejected: list[str], problems: list[str], out: Path) -> None:
    """The grades as a table, then refused files and grader problems, one line each."""
    table = Table(title="labs grade")
    for column in ("student", "notebook", "status", "points", "notes"):
        table.add_column(column, overflow="fold")
    for g in batch.grades:
        notes = "; ".join(filter(None, [g.error, *g.flags]))
        table.add_row(g.student, f"{g.chapter}/{g.notebook}", g.status, f"{g.score:g}/{g.max_score:g}", printable(notes))
    console.print(table)
    for line in rejected:
        err_console.print(printable(f"error: {line}"), soft_wrap=True)
    for line in problems:
        err_console.print(printable(line), soft_wrap=True)
    console.print("isolation: " + "; ".join(batch.isolation), soft_wrap=True)
    graded = sum(g.status == "graded" for g in batch.grades)
    console.print(f"{graded}/{len(batch.grades)} notebooks graded, {len(rejected)} files refused; "
                  f"report: {out / 'summary.html'}")


def printable(text: str) -> Text:
    """``text`` for the terminal: no rich markup, no control characters but newlines and tabs."""
    return Text("".join(c if c.isprintable() or c in "\n\t" else "?" for c in text))


def feedback(
    chapter: Annotated[list[str] | None, typer.Option("--chapter")] = None,
    student: Annotated[str | None, typer.Option(help="one student (default: all graded)")] = None,
    course_dir: CourseOpt = Path("course"),
    root: RootOpt = Path("build/grading"),
    db: DbOpt = None,
) -> None:
    """Render nbgrader feedback (HTML) for graded submissions: scores and why, no hidden tests."""
    folders = [f for f in resolve_chapters(chapter, course_dir) if (root / "autograded").is_dir()
               and any((root / "autograded").glob(f"*/{f.name}"))]
    if not folders:
        _fail(f"{root / 'autograded'}: nothing graded yet (run labs grade first)")
    total, errors = 0, []
    for folder in folders:
        try:
            files, failed = generate_feedback(root.resolve(), db_url_for(root, db), folder.name, student)
        except Exception as err:  # noqa: BLE001 - nbgrader or the gradebook unusable: one line, exit 2
            _fail(plain(str(err) or type(err).__name__, 300))
        total, errors = total + len(files), errors + failed
    for line in errors:
        err_console.print(printable(line), soft_wrap=True)
    console.print(f"{total} feedback files under {root / 'feedback'}" + (f", {len(errors)} failed" if errors else ""))
    raise typer.Exit(1 if errors else 0)


def export(
    format: Annotated[str, typer.Option("--format", help="csv | gradescope")] = "csv",
    out: Annotated[Path | None, typer.Option("--out", help="file (csv) or folder (gradescope)")] = None,
    root: RootOpt = Path("build/grading"),
    db: DbOpt = None,
) -> None:
    """Export grades: CSV from the gradebook, or Gradescope results.json per submission."""
    if format == "csv":
        target = out or root / "grades.csv"
        target.parent.mkdir(parents=True, exist_ok=True)
        console.print(f"{export_csv(db_url_for(root, db), target)} rows written to {target}")
    elif format == "gradescope":
        results = root / "reports" / "results.json"
        if not results.is_file():
            _fail(f"{results}: no grading results (run labs grade first)")
        target = out or root / "gradescope"
        count, errors = export_gradescope(results, target)
        for line in errors:
            err_console.print(printable(line), soft_wrap=True)
        console.print(f"{count} results.json files under {target}" + (f", {len(errors)} failed" if errors else ""))
        raise typer.Exit(1 if errors else 0)
    else:
        _fail(f"--format {format}: expected csv or gradescope")
