"""Instructor commands that grade: `grade`, `feedback`, `export` (docs/grading.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from graders import paths as defaults
from graders.boundary.protocol import Limits
from labs.commands.common import (
    DEFAULT_EXCHANGE,
    ChapterOpt,
    CourseOpt,
    DbOpt,
    ExchangeRootOpt,
    RootOpt,
    chapter_folders,
    isolation_warning,
    quiet_nbgrader,
    written,
)
from labs.console import console, err_console, fail, progress_bar
from labs.options import parse_shard, parse_size

LIMITS = Limits()  # the defaults of `labs grade`'s limits are the sandbox's own


def grade(
    submissions: Annotated[
        Path, typer.Argument(help="folder <student>/<chapter>/<lab>.ipynb, or a zip of one")
    ],
    chapter: ChapterOpt = None,
    course_dir: CourseOpt = defaults.COURSE,
    root: RootOpt = defaults.GRADING_ROOT,
    db: DbOpt = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="sandboxes in parallel (default: cores)", show_default=False)
    ] = 0,
    timeout: Annotated[float, typer.Option(help="wall-clock seconds per submission")] = LIMITS.wall_seconds,
    memory: Annotated[
        str, typer.Option(help="memory per submission: 4G, 512M, 1.5GiB (a bare number is MiB)")
    ] = f"{LIMITS.memory_bytes >> 30}G",
    cpu: Annotated[
        int, typer.Option(help="CPU seconds per submission, all its processes together")
    ] = LIMITS.cpu_seconds,
    shard: Annotated[
        str | None, typer.Option(help="i/n: grade every n-th student, starting at the i-th")
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="folder for results.json and summary.html (default: ROOT/reports)")
    ] = None,
    vetting: Annotated[
        bool,
        typer.Option(
            "--vetting/--no-vetting",
            help="--no-vetting: run solution cells without "
            "reading them first, the sandbox the only layer (to test the sandbox; "
            "never for a class)",
        ),
    ] = True,
    salts: Annotated[
        Path | None,
        typer.Option(
            help="folder of the class's salts, one per chapter, made on first "
            "grading (default: ROOT/salts; shards of one class share one)"
        ),
    ] = None,
) -> None:
    """Grade submissions in sandboxes; scores go to the nbgrader gradebook."""
    try:
        shard_spec = parse_shard(shard) if shard else (1, 1)
    except ValueError as err:
        fail(f"--shard: {err}")
    memory_bytes = parse_size(memory)
    if memory_bytes is None:
        fail(f"--memory: {memory!r} is not a size (write 4G, 512M or a number of MiB)")
    if jobs < 0 or timeout <= 0 or memory_bytes <= 0 or cpu <= 0:
        fail("--jobs, --timeout, --memory and --cpu must be positive")
    # torch loads with the pipeline: only once the options are known to be good
    from graders.pipeline import BadRequest, GradeRequest, grade_submissions
    from labs.tables import print_grade_run

    quiet_nbgrader()
    isolation_warning()
    if not vetting:
        err_console.print(
            "labs grade --no-vetting: solution cells run unread; rules rest on the recorders alone",
            style="yellow",
        )
    request = GradeRequest(
        submissions,
        chapter,
        course_dir,
        root,
        db,
        jobs,
        Limits(wall_seconds=timeout, cpu_seconds=cpu, memory_bytes=memory_bytes),
        shard_spec,
        report,
        vetting,
        salts,
    )
    with progress_bar("grading", err_console, disable=not err_console.is_terminal) as bar:
        try:
            run = grade_submissions(request, bar.total, bar.advance)
        except BadRequest as err:
            fail(str(err))
    print_grade_run(run)
    raise typer.Exit(0 if run.complete else 1)


def feedback(
    chapter: ChapterOpt = None,
    student: Annotated[str | None, typer.Option(help="one student (default: all graded)")] = None,
    course_dir: CourseOpt = defaults.COURSE,
    root: RootOpt = defaults.GRADING_ROOT,
    db: DbOpt = None,
    release_to: Annotated[
        bool,
        typer.Option(
            "--release",
            help="also hand it back through the exchange (students fetch it in the Assignments tab)",
        ),
    ] = False,
    exchange_root: ExchangeRootOpt = DEFAULT_EXCHANGE,
) -> None:
    """Render nbgrader feedback (HTML) for graded submissions, shards' roots under ROOT included: scores and why."""
    from graders.nbgrader.course_root import CourseRoot
    from graders.nbgrader.exchange import release_feedback_of
    from graders.nbgrader.feedback import FeedbackError, feedback_for_class

    folders = chapter_folders(chapter, course_dir)
    try:
        files, errors = feedback_for_class(
            root.resolve(), CourseRoot(root, db).db_url, [f.name for f in folders], student
        )
    except FeedbackError as err:
        fail(str(err))
    handed_back = (
        [f.name for f in folders] if release_to else []
    )  # a student's failure keeps no one else's back
    try:
        for name, students in release_feedback_of(root.resolve(), handed_back, exchange_root.resolve()):
            if students:
                console.print(f"released feedback on {name} to {', '.join(students)}")
    except RuntimeError as err:
        fail(str(err))
    written(f"{len(files)} feedback files under {CourseRoot(root).feedback}", errors)


def export(
    format: Annotated[str, typer.Option("--format", help="csv | gradescope")] = "csv",
    out: Annotated[Path | None, typer.Option("--out", help="file (csv) or folder (gradescope)")] = None,
    root: RootOpt = defaults.GRADING_ROOT,
    db: DbOpt = None,
    chapter: ChapterOpt = None,
) -> None:
    """Export grades from the gradebook: CSV, or Gradescope results.json per submission (manual scores included)."""
    from graders.nbgrader.course_root import CourseRoot
    from graders.nbgrader.reports import export_csv, export_gradescope, gradebook_chapters

    if format not in ("csv", "gradescope"):
        fail(f"--format {format}: expected csv or gradescope")
    grading = CourseRoot(root, db)
    url = grading.db_url
    if not grading.has_gradebook:
        fail(
            f"{root}: nothing graded yet (no {grading.gradebook_file.name} there; run labs grade first, "
            "or name the gradebook with --db)"
        )
    target = out or (grading.csv_export if format == "csv" else grading.gradescope_export)
    if format == "csv" and target.is_dir():
        fail(f"--out {target}: a folder; the CSV export is a file")
    if format == "gradescope" and target.exists() and not target.is_dir():
        fail(f"--out {target}: a file; the Gradescope export is a folder")
    errors: list[str] = []
    try:
        if format == "csv":
            target.parent.mkdir(parents=True, exist_ok=True)
            count = export_csv(url, target, chapter)
        else:
            count, errors = export_gradescope(url, root, target, chapter)
    except Exception as err:  # noqa: BLE001 - a gradebook that cannot be read: one line
        fail(f"gradebook {url}: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
    if not count and not errors:
        known = gradebook_chapters(url)
        if unknown := [c for c in chapter or [] if c not in known]:
            fail(
                f"{url}: no chapter {', '.join(unknown)} in the gradebook (it has: {', '.join(known) or 'none'})"
            )
        what = f"nothing of {', '.join(chapter)}" if chapter else "nothing"
        fail(f"{url}: {what} graded yet (no graded notebook in the gradebook; run labs grade first)")
    written(
        f"{count} rows written to {target}"
        if format == "csv"
        else f"{count} results.json files under {target}",
        errors,
    )
