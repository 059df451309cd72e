"""The `labs` command: every command parses its options, makes one call, and prints what came back.

Commands import what they need when they run, so ``labs --help`` and a mistyped option answer at once.
"""

from __future__ import annotations

import secrets
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from graders import paths as defaults
from labs.console import console, err_console, fail, printable
from labs.options import parse_shard, parse_size, resolve_device

if TYPE_CHECKING:  # torch and nbgrader load only once a command needs them
    from graders.check.selfcheck import ChapterCheck, SolutionFolders

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="PyTorch Labs: lint, run and check the course notebooks; release and grade labs.")
new_app = typer.Typer(no_args_is_help=True, help="Scaffold a chapter or a lab that follows docs/authoring.md.")
app.add_typer(new_app, name="new")

PathsArg = Annotated[list[Path] | None, typer.Argument(help="notebooks or folders (default: course/)")]
ChaptersArg = Annotated[list[str] | None, typer.Argument(help="chapter names or folders (default: every chapter)")]
ChapterOpt = Annotated[list[str] | None, typer.Option("--chapter", help="chapters (default: all)")]
CourseOpt = Annotated[Path, typer.Option("--course", help="nbgrader source folder holding the chapters")]
ExercisesOpt = Annotated[list[str] | None, typer.Option("--exercise", "-e", help="an exercise name (repeat; default: double)")]
WrongDirOpt = Annotated[Path, typer.Option("--wrong-solutions", help="folder of <chapter>/<grade_id>__*.py")]
RightDirOpt = Annotated[Path, typer.Option("--right-solutions", help="folder of <chapter>/<grade_id>__*.py: other "
                                           "correct solutions, each must earn full marks")]
WorkspaceOpt = Annotated[Path, typer.Option("--workspace", help="the student's folder; existing files are kept")]
ReleaseBuildOpt = Annotated[Path, typer.Option("--build", help="nbgrader course folder for the release")]
RootOpt = Annotated[Path, typer.Option("--root", help="nbgrader course folder (gradebook, autograded, feedback)")]
DbOpt = Annotated[str | None, typer.Option("--db", help="SQLAlchemy URL of the gradebook (default: SQLite in --root)")]
DEFAULT_PATHS = [defaults.COURSE]


def _quiet_nbgrader() -> None:
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's own session bookkeeping noise


def _chapters(names: list[str] | None, course: Path, with_labs: bool = False) -> list[Path]:
    from graders import coursedir

    try:
        return coursedir.chapters_with_labs(names, course) if with_labs else coursedir.resolve_chapters(names, course)
    except coursedir.LayoutError as err:
        fail(str(err))


def _device(device: str) -> str:
    try:
        return resolve_device(device)
    except ValueError:
        fail(f"unknown --device {device!r}: choose auto, cpu or cuda")
    except RuntimeError:
        fail("--device cuda requested but CUDA is not available on this machine (torch.cuda.is_available() is False)")


def _isolation_warning() -> None:
    from graders.grader.sandbox.worker import isolation_warning

    warning = isolation_warning(True)
    if warning:
        err_console.print(warning, style="yellow", soft_wrap=True)


# --- authors ------------------------------------------------------------------------------------


@new_app.command("chapter")
def new_chapter(name: Annotated[str, typer.Argument(help="NN_topic, e.g. 06_tricks")],
                exercise: ExercisesOpt = None, course_dir: CourseOpt = defaults.COURSE,
                wrong_dir: WrongDirOpt = defaults.WRONG_SOLUTIONS) -> None:
    """A chapter folder with a lesson and a lab (lab_<topic>), its probes and wrong solutions."""
    from labs import scaffold

    try:
        written = scaffold.chapter_files(course_dir, wrong_dir, name, exercise or []).write()
    except scaffold.ScaffoldError as err:
        fail(str(err))
    _print_written(written)


@new_app.command("lab")
def new_lab(chapter: Annotated[str, typer.Argument(help="an existing chapter folder name")],
            name: Annotated[str, typer.Argument(help="the lab is lab_<name>.ipynb")],
            exercise: ExercisesOpt = None, course_dir: CourseOpt = defaults.COURSE,
            wrong_dir: WrongDirOpt = defaults.WRONG_SOLUTIONS) -> None:
    """A lab in an existing chapter, with a probe file and wrong solutions per exercise."""
    from labs import scaffold

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
         fix: Annotated[bool, typer.Option("--fix", help="strip outputs and normalise metadata")] = False,
         learner_rules: Annotated[bool, typer.Option("--learner-rules/--no-learner-rules", help="each lesson fits "
                                                     "one sitting, each lab uses only torch names a lesson showed "
                                                     "(docs/authoring.md; on by default)")] = True) -> None:
    """Check notebooks against the course conventions; print file:cell: message per problem."""
    from labs import lint as rules
    from labs.notebooks import BadInput, discover

    try:
        notebooks = discover(paths or DEFAULT_PATHS)
    except BadInput as err:
        fail(str(err))
    for line in rules.fix_all(notebooks) if fix else []:
        console.print(line)
    problems = rules.lint(notebooks, learner_rules)
    for problem in problems:
        console.print(str(problem), soft_wrap=True)
    console.print(f"{len(notebooks)} notebooks, {len(problems)} problems")
    raise typer.Exit(1 if problems else 0)


# --- CI -----------------------------------------------------------------------------------------


@app.command()
def run(
    paths: PathsArg = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="notebooks executed at once")] = 2,
    device: Annotated[str, typer.Option(help="auto, cpu or cuda (injected as DEVICE)")] = "auto",
    smoke: Annotated[bool, typer.Option("--smoke", help="inject SMOKE=True: tiny sizes")] = False,
    shard: Annotated[str | None, typer.Option(help="run only shard i/n, split by recorded duration")] = None,
    timeout: Annotated[float, typer.Option(help="seconds per notebook before its kernel is killed")] = 600,
    report_dir: Annotated[Path, typer.Option("--report", help="folder for executed notebooks and reports")] = (
        defaults.REPORT_DIR),
    cache_dir: Annotated[Path, typer.Option("--cache", help="the kernels' caches (inductor, matplotlib)")] = (
        defaults.KERNEL_CACHE),
    record_timings: Annotated[bool, typer.Option("--record-timings", help="write durations to the timings file")] = False,
    timings_file: Annotated[Path | None, typer.Option("--timings", help="recorded durations (for --shard)")] = None,
    html: Annotated[bool, typer.Option("--html/--no-html", help="render the executed notebooks as a static site")] = False,
    answer_leaks: Annotated[bool, typer.Option("--answer-leaks", help="fail a lesson that shows an exercise's answer "
                                               "between its heading and the exercise (docs/authoring.md)")] = False,
) -> None:
    """Execute notebooks with papermill, N at a time, and write report.json and junit.xml."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from labs.notebooks import BadInput, discover
    from labs.run import report, timings
    from labs.run.pipeline import RunRequest, run_notebooks

    try:
        discover(paths or DEFAULT_PATHS)  # a path that is not there is said before the device check loads torch
    except BadInput as err:
        fail(str(err))
    if jobs < 1:
        fail(f"--jobs must be at least 1, got {jobs}")
    if timeout <= 0:
        fail(f"--timeout must be positive, got {timeout:g}")
    try:
        shard_spec = parse_shard(shard) if shard else None
    except ValueError as err:
        fail(f"--shard: {err}")
    request = RunRequest(paths or DEFAULT_PATHS, _device(device), smoke, jobs, shard_spec, timeout, report_dir,
                         timings_file or timings.TIMINGS_FILE, cache_dir, answer_leaks)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("notebooks", total=None)

        def started(count: int) -> None:
            progress.update(task, total=count)
            console.print(f"labs run: {count} notebooks, jobs={jobs}, device={request.device}, smoke={smoke}"
                          + (f", shard {shard}" if shard else ""))

        def finished(result: report.NotebookResult) -> None:
            progress.advance(task)
            progress.console.print(f"{result.status:>7}  {result.seconds:6.1f}s  {result.notebook}")

        try:
            outcome = run_notebooks(request, started, finished, html=html, record=record_timings)
        except (BadInput, ValueError) as err:
            fail(str(err))
    report.print_summary(outcome.results, console, request.device)
    console.print(f"report: {', '.join(map(str, outcome.reports))}")
    if outcome.site:
        console.print(f"static course: {outcome.site}")
    if outcome.timings_key:
        console.print(f"timings recorded in {request.timings_file} under {outcome.timings_key}")
    raise typer.Exit(0 if outcome.passed else 1)


@app.command("run-merge")
def run_merge(
    shards: Annotated[list[Path], typer.Argument(help="the report folders of `labs run --shard i/n`, one per shard")],
    report_dir: Annotated[Path, typer.Option("--report", help="folder for the merged reports")] = defaults.REPORT_DIR,
    html: Annotated[bool, typer.Option("--html/--no-html", help="render the merged notebooks as a static site")] = False,
) -> None:
    """Merge sharded `labs run` reports into one report.json, junit.xml (and site): exit 1 if a notebook failed."""
    from labs.run import report
    from labs.run.merge import MergeError, write_merged

    try:
        merged = write_merged(shards, report_dir, html)
    except MergeError as err:
        fail(str(err))
    report.print_summary(merged.results, console, merged.settings.get("device") or "cpu")
    console.print(f"report: {', '.join(map(str, merged.reports))} (merged from {len(shards)} shards)")
    if merged.site:
        console.print(f"static course: {merged.site}")
    raise typer.Exit(0 if all(r.passed for r in merged.results) else 1)


@app.command()
def check(
    chapters: ChaptersArg = None,
    course_dir: CourseOpt = defaults.COURSE,
    wrong_dir: WrongDirOpt = defaults.WRONG_SOLUTIONS,
    right_dir: RightDirOpt = defaults.RIGHT_SOLUTIONS,
    build: Annotated[Path, typer.Option(help="scratch nbgrader courses")] = defaults.CHECK_BUILD,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="sandboxes in parallel")] = 2,
    sandbox: Annotated[bool, typer.Option("--sandbox/--no-sandbox", help="--no-sandbox: grade without bubblewrap "
                                          "(a quick try while writing probes, or where bwrap is missing)")] = True,
    min_exercises: Annotated[int | None, typer.Option(help="graded exercises every lab must have")] = None,
    min_points: Annotated[float | None, typer.Option(help="points every lab must be worth")] = None,
    min_wrong: Annotated[int | None, typer.Option(help="wrong solutions every exercise must have")] = None,
    mutants: Annotated[bool, typer.Option("--mutants", help="instead: mutation-test each reference solution "
                                          "(stale results only; docs/authoring.md)")] = False,
    record: Annotated[bool, typer.Option("--record", help="write each lab's verdicts next to its probes "
                                         "(<lab>.selfcheck.json, what make test checks is current)")] = False,
    salts: Annotated[int, typer.Option("--salts", help="grade every version under N fresh salts: each verdict "
                                       "must hold under every one (N times the time)")] = 1,
) -> None:
    """Lab self-check, graded like `labs grade`: source = full, release = zero, wrong solutions lose, right ones earn."""
    folders = _chapters(chapters, course_dir, with_labs=True)
    if jobs < 1 or salts < 1:
        fail("--jobs and --salts must be at least 1")
    if mutants:
        _check_mutants(folders, build, jobs, sandbox)
    # torch and nbgrader load only once the arguments are known to be good
    from graders.check.selfcheck import SolutionFolders, Standard, check_chapters
    from labs.tables import print_chapter_check

    _quiet_nbgrader()
    if sandbox:
        _isolation_warning()
    else:
        err_console.print("labs check --no-sandbox: submissions run without bubblewrap", style="yellow")
    default = Standard()
    standard = Standard(default.exercises if min_exercises is None else min_exercises,
                        default.points if min_points is None else min_points,
                        default.wrong_per_exercise if min_wrong is None else min_wrong)
    results = check_chapters(folders, build.resolve(), SolutionFolders.found(wrong_dir, right_dir), jobs, standard,
                             sandbox, salts)
    for result in results:
        print_chapter_check(result)
    if record:
        _record_checks(folders, results, SolutionFolders.found(wrong_dir, right_dir))
    ok = all(r.ok for r in results)
    console.print(f"{sum(r.ok for r in results)}/{len(results)} chapters pass the self-check",
                  style="green" if ok else "red")
    raise typer.Exit(0 if ok else 1)


def _record_checks(folders: list[Path], results: list[ChapterCheck], solutions: SolutionFolders) -> None:
    """`labs check --record`: each checked lab's verdicts, committed next to its probes."""
    from graders.check.selfcheck_ledger import record_chapter

    for folder, result in zip(folders, results, strict=True):
        for path in record_chapter(folder, result, solutions):
            console.print(f"recorded {path}", markup=False, highlight=False)


def _check_mutants(folders: list[Path], build: Path, jobs: int, sandbox: bool) -> None:
    """`labs check --mutants`: each lab's kill rate per exercise, every survivor as a diff; exit 1 below the target."""
    from graders.check.mutants_run import check_mutants, report_lines

    if sandbox:
        _isolation_warning()
    reports = check_mutants(folders, (build / "mutants").resolve(), jobs, sandbox,
                            lambda line: console.print(line, markup=False, highlight=False))
    for report in reports:
        for line in report_lines(report):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    ok = all(r.ok for r in reports)
    console.print(f"{sum(r.ok for r in reports)}/{len(reports)} labs meet the mutation target",
                  style="green" if ok else "red")
    raise typer.Exit(0 if ok else 1)


# --- instructors --------------------------------------------------------------------------------


ExchangeRootOpt = Annotated[Path, typer.Option("--exchange-root", help="nbgrader's exchange folder (labs hub's)")]
DEFAULT_EXCHANGE = defaults.EXCHANGE


@app.command()
def release(chapters: ChaptersArg = None, course_dir: CourseOpt = defaults.COURSE,
            build: ReleaseBuildOpt = defaults.RELEASE_BUILD, workspace: WorkspaceOpt = defaults.STUDENT_WORKSPACE,
            exchange: Annotated[bool, typer.Option("--exchange", help="also put each chapter's lab in nbgrader's "
                                                   "exchange (students fetch it in the Assignments tab)")] = False,
            exchange_root: ExchangeRootOpt = DEFAULT_EXCHANGE) -> None:
    """Build student (solution-free) notebooks with nbgrader and add new ones to the workspace."""
    from graders import coursedir
    from graders.nbgrader import exchange as nbgrader_exchange
    from graders.nbgrader.release import build_release, sync_workspace

    folders = _chapters(chapters, course_dir)
    try:
        released = build_release(folders, build.resolve())
    except RuntimeError as err:
        fail(str(err))
    sync = sync_workspace(released, workspace)
    console.print(f"released {len(folders)} chapters into {released}")
    console.print(f"workspace {workspace}: {len(sync.added)} new files, {len(sync.kept)} kept as the student left them")
    for folder in folders if exchange else []:
        labs = [p.name for p in coursedir.labs_in(folder)]
        try:
            outbound = nbgrader_exchange.release_assignment(build.resolve(), folder.name, exchange_root.resolve(), labs)
        except RuntimeError as err:
            fail(str(err))
        console.print(f"released {folder.name} ({', '.join(labs) or 'no lab'}) to the exchange: {outbound}")


@app.command()
def collect(chapters: Annotated[list[str], typer.Argument(help="chapters to collect")],
            course_dir: CourseOpt = defaults.COURSE, root: RootOpt = defaults.GRADING_ROOT,
            exchange_root: ExchangeRootOpt = DEFAULT_EXCHANGE,
            owner_check: Annotated[bool, typer.Option(help="collect only submissions owned by the unix user of the "
                                                      "student they name (off only for labs hub --demo, where "
                                                      "one unix user runs every server)")] = True) -> None:
    """Collect each student's latest submission from the exchange into ROOT/submitted (for labs grade)."""
    from graders import coursedir
    from graders.nbgrader import exchange as nbgrader_exchange

    for folder in _chapters(chapters, course_dir, with_labs=True):
        try:
            found = nbgrader_exchange.collect(root.resolve(), folder.name, exchange_root.resolve(),
                                              [p.name for p in coursedir.labs_in(folder)], check_owner=owner_check)
        except RuntimeError as err:
            fail(str(err))
        for name, why in sorted(found.refused.items()):
            console.print(f"refused {name}: {why}", style="red", markup=False)
        for student, path in found.folders.items():
            console.print(f"collected {student}/{folder.name}: {path}")
        console.print(f"{len(found.folders)} submissions of {folder.name} in {root / 'submitted'} "
                      f"(next: labs grade {root / 'submitted'} --chapter {folder.name})")


@app.command()
def grade(
    submissions: Annotated[Path, typer.Argument(help="folder <student>/<chapter>/<lab>.ipynb, or a zip of one")],
    chapter: ChapterOpt = None,
    course_dir: CourseOpt = defaults.COURSE,
    root: RootOpt = defaults.GRADING_ROOT,
    db: DbOpt = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="sandboxes in parallel (default: cores)")] = 0,
    timeout: Annotated[float, typer.Option(help="wall-clock seconds per submission")] = 300,
    memory: Annotated[str, typer.Option(help="memory per submission: 4G, 512M, 1.5GiB (a bare number is MiB)")] = "4G",
    cpu: Annotated[int, typer.Option(help="CPU seconds per submission, all its processes together")] = 600,
    shard: Annotated[str | None, typer.Option(help="i/n: grade every n-th student, starting at the i-th")] = None,
    report: Annotated[Path | None, typer.Option(help="folder for results.json and summary.html (default: ROOT/reports)")] = None,
    vetting: Annotated[bool, typer.Option("--vetting/--no-vetting", help="--no-vetting: run solution cells without "
                                          "reading them first, the sandbox the only layer (to test the sandbox; "
                                          "never for a class)")] = True,
    salts: Annotated[Path | None, typer.Option(help="folder of the class's salts, one per chapter, made on first "
                                               "grading (default: ROOT/salts; shards of one class share one)")] = None,
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
    import threading

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from graders.inside.jail import Limits
    from graders.pipeline import BadRequest, GradeRequest, grade_submissions
    from labs.tables import print_grade_run

    _quiet_nbgrader()
    _isolation_warning()
    if not vetting:
        err_console.print("labs grade --no-vetting: solution cells run unread; rules rest on the recorders alone",
                          style="yellow")
    request = GradeRequest(submissions, chapter, course_dir, root, db, jobs,
                           Limits(wall_seconds=timeout, cpu_seconds=cpu, memory_bytes=memory_bytes), shard_spec, report,
                           vetting, salts)
    lock = threading.Lock()
    with Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, disable=not err_console.is_terminal) as progress:
        task = progress.add_task("grade", total=None)

        def graded(_: object) -> None:
            with lock:
                progress.advance(task)

        try:
            run = grade_submissions(request, lambda count: progress.update(task, total=count), graded)
        except BadRequest as err:
            fail(str(err))
    print_grade_run(run)
    raise typer.Exit(0 if run.complete else 1)


@app.command()
def salt(chapter: Annotated[str, typer.Argument(help="the chapter whose salt to show or rotate, e.g. 02_tensors")],
         root: RootOpt = defaults.GRADING_ROOT,
         salts: Annotated[Path | None, typer.Option(help="folder of the class's salts (default: ROOT/salts)")] = None,
         rotate: Annotated[bool, typer.Option("--rotate", help="make a new salt: every later run draws new "
                                              "inputs (recorded in the folder's rotations.log)")] = False) -> None:
    """Show a chapter's salt fingerprint, or rotate the salt (the inputs every grading of the chapter draws)."""
    from graders.grader import salts as class_salts

    folder = salts or class_salts.salts_folder(root)
    try:
        kept = class_salts.kept_salt(folder, chapter)
        if kept is None:
            fail(f"{folder}: no salt for {chapter} yet (it is made on the chapter's first labs grade)")
        if rotate:
            old, new = class_salts.rotate(folder, chapter)
            was = class_salts.fingerprint(old) if old is not None else "none"
            console.print(f"{chapter}: salt rotated ({was} -> {class_salts.fingerprint(new)}); later runs draw new inputs")
        else:
            console.print(f"{chapter}: salt {class_salts.fingerprint(kept)}")
    except (OSError, ValueError) as err:
        fail(f"{folder}: {err}")


@app.command("check-lab")
def check_lab(
    notebook: Annotated[Path, typer.Argument(help="your lab, e.g. student/03_modules/lab_modules.ipynb")],
    course_dir: CourseOpt = defaults.COURSE,
    timeout: Annotated[float, typer.Option(help="wall-clock seconds for your notebook")] = 300,
) -> None:
    """Self-learners: grade your lab with the hidden checks, in the sandbox, and see what a graded student sees."""
    from graders.pipeline import BadRequest
    from labs.check_lab import NotALab, print_lab_check
    from labs.check_lab import check_lab as grade_alone

    if timeout <= 0:
        fail("--timeout must be positive")
    _quiet_nbgrader()
    _isolation_warning()
    try:
        result = grade_alone(notebook, course_dir, defaults.BUILD, timeout)
    except (NotALab, BadRequest) as err:
        fail(str(err))
    print_lab_check(result)
    raise typer.Exit(0 if result.status == "graded" and result.score == result.max_score else 1)


@app.command()
def feedback(chapter: ChapterOpt = None,
             student: Annotated[str | None, typer.Option(help="one student (default: all graded)")] = None,
             course_dir: CourseOpt = defaults.COURSE, root: RootOpt = defaults.GRADING_ROOT, db: DbOpt = None,
             release_to: Annotated[bool, typer.Option("--release", help="also hand it back through the exchange "
                                                      "(students fetch it in the Assignments tab)")] = False,
             exchange_root: ExchangeRootOpt = DEFAULT_EXCHANGE) -> None:
    """Render nbgrader feedback (HTML) for graded submissions, shards' roots under ROOT included: scores and why."""
    from graders.coursedir import db_url_for
    from graders.nbgrader import exchange as nbgrader_exchange
    from graders.nbgrader.feedback import FeedbackError, feedback_for_class

    folders = _chapters(chapter, course_dir)
    try:
        files, errors = feedback_for_class(root.resolve(), db_url_for(root, db), [f.name for f in folders], student)
    except FeedbackError as err:
        fail(str(err))
    for folder in folders if release_to else []:  # some student's feedback may have failed: the others go
        try:
            students = nbgrader_exchange.release_feedback(root.resolve(), folder.name, exchange_root.resolve())
        except RuntimeError as err:
            fail(str(err))
        if students:
            console.print(f"released feedback on {folder.name} to {', '.join(students)}")
    _written(f"{len(files)} feedback files under {root / 'feedback'}", errors)


def _written(summary: str, errors: list[str]) -> None:
    """Each file that failed, one line each, then the summary; exit 1 when any failed."""
    for line in errors:
        err_console.print(printable(line), soft_wrap=True)
    console.print(summary + (f", {len(errors)} failed" if errors else ""))
    raise typer.Exit(1 if errors else 0)


@app.command()
def export(
    format: Annotated[str, typer.Option("--format", help="csv | gradescope")] = "csv",
    out: Annotated[Path | None, typer.Option("--out", help="file (csv) or folder (gradescope)")] = None,
    root: RootOpt = defaults.GRADING_ROOT,
    db: DbOpt = None,
) -> None:
    """Export grades from the gradebook: CSV, or Gradescope results.json per submission (manual scores included)."""
    from graders.coursedir import db_url_for
    from graders.nbgrader.reports import export_csv, export_gradescope

    if format not in ("csv", "gradescope"):
        fail(f"--format {format}: expected csv or gradescope")
    url = db_url_for(root, db)
    if db is None and not (root / "gradebook.db").is_file():
        fail(f"{root}: nothing graded yet (no gradebook.db there; run labs grade first, or name the gradebook with --db)")
    target = out or root / ("grades.csv" if format == "csv" else "gradescope")
    errors: list[str] = []
    try:
        if format == "csv":
            target.parent.mkdir(parents=True, exist_ok=True)
            count = export_csv(url, target)
        else:
            count, errors = export_gradescope(url, root, target)
    except Exception as err:  # noqa: BLE001 - a gradebook that cannot be read: one line
        fail(f"gradebook {url}: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
    if not count and not errors:
        fail(f"{url}: no graded notebooks in the gradebook (run labs grade first)")
    _written(f"{count} rows written to {target}" if format == "csv" else f"{count} results.json files under {target}",
             errors)


# --- students -----------------------------------------------------------------------------------


@app.command()
def lab(
    port: Annotated[int, typer.Option(help="port on 127.0.0.1")] = 8888,
    token: Annotated[str | None, typer.Option(help="access token (default: random, printed)")] = None,
    workspace: WorkspaceOpt = defaults.STUDENT_WORKSPACE,
    course_dir: CourseOpt = defaults.COURSE,
    open_browser: Annotated[bool, typer.Option("--browser/--no-browser")] = True,
    build: ReleaseBuildOpt = defaults.RELEASE_BUILD,
) -> None:
    """Release the student notebooks and start JupyterLab on them (127.0.0.1, token auth on)."""
    from labs.lab import forward_stop_signals, listening, start_jupyterlab

    release(None, course_dir, build, workspace)
    token = token or secrets.token_hex(16)
    server = start_jupyterlab(workspace, port, token, open_browser, build.resolve())
    forward_stop_signals(server)
    try:
        if listening(server, port):
            console.print(f"JupyterLab: http://127.0.0.1:{port}/lab?token={token}")
        raise typer.Exit(server.wait())
    except KeyboardInterrupt:  # Ctrl-C reached the server too: let it shut down cleanly
        raise typer.Exit(server.wait()) from None


@app.command()
def hub(
    port: Annotated[int, typer.Option(help="JupyterHub's port")] = 8000,
    root: Annotated[Path, typer.Option("--root", help="homes, exchange, config and state of the class")] = (
        defaults.HUB_ROOT),
    class_list: Annotated[Path | None, typer.Option("--class", help="the class list: a CSV of name and optional "
                                                    "email, one person a line (instead of --student)")] = None,
    instructor: Annotated[str, typer.Option(help="the instructor's user name (admin, formgrader)")] = "instructor",
    student: Annotated[list[str] | None, typer.Option("--student", help="a student's user name (repeat; "
                                                      "default: ada, ben)")] = None,
    grading: Annotated[Path, typer.Option(help="the instructor's nbgrader course (labs grade --root)")] = (
        defaults.GRADING_ROOT),
    course_dir: CourseOpt = defaults.COURSE,
    build: Annotated[Path, typer.Option(help="labs release's --build (it holds the sources)")] = (
        defaults.RELEASE_BUILD),
    proxy: Annotated[Path | None, typer.Option(help="configurable-http-proxy (default: build/node, then PATH)")] = None,
    ip: Annotated[str, typer.Option(help="the address it listens on (0.0.0.0: every interface; use --https)")] = (
        "127.0.0.1"),
    https: Annotated[tuple[Path, Path] | None, typer.Option("--https", help="serve HTTPS with this certificate and "
                                                            "key (PEM files)")] = None,
    memory: Annotated[float | None, typer.Option(help="GiB of memory per student, all their processes together "
                                                 "(default: a share of 80% of the RAM, 1 to 4 GiB)")] = None,
    cpus: Annotated[float | None, typer.Option(help="cores per student, a CPU quota (default: 1)")] = None,
    processes: Annotated[int | None, typer.Option(help="processes and threads per student (default: 256)")] = None,
    disk: Annotated[float | None, typer.Option(help="GiB of disk per student: their home a filesystem of its own, "
                                               "and the exchange one of 32 MiB a person (default: 2, or a share "
                                               "of half the free disk; 0: homes on the host's, unlimited)")] = None,
    cull_idle: Annotated[int, typer.Option(help="stop a server idle this many seconds (0: never)")] = 3600,
    subdomain_host: Annotated[str | None, typer.Option(
        "--subdomain-host", help="each server on an origin of its own, <name>.HOST: a URL http(s)://HOST[:PORT] "
        "(a wildcard DNS record; for HTTPS a wildcard certificate), localhost (http://localhost:PORT) or off "
        "(default: localhost on 127.0.0.1 over HTTP, else off)")] = None,
    demo: Annotated[bool, typer.Option("--demo", help="no accounts: any password, every server as this unix "
                                       "user (a demo on one machine, not a class)")] = False,
    remove_class: Annotated[bool, typer.Option("--remove-class", help="remove the class made under --root: its "
                                               "unix users, cgroups and folder (homes included), then exit")] = False,
    config_only: Annotated[bool, typer.Option("--config-only", help="write jupyterhub_config.py and exit")] = False,
) -> None:
    """A class on JupyterHub: a unix user per person, sign-in, per-student limits, nbgrader's exchange."""
    from labs import hub as class_hub
    from labs.hub.roster import read_roster

    try:
        people = read_roster(class_list) if class_list else []
        students = tuple(p.name for p in people if p.name != instructor) or tuple(
            student or class_hub.DEFAULT_STUDENTS)
        share = class_hub.default_limits(len(students))
        limits = class_hub.Limits(int(memory * (1 << 30)) if memory else share.memory_bytes,
                                  cpus or share.cpus, processes or share.processes)
        if disk is None:
            import shutil

            from labs.hub.disks import disks_possible

            free = shutil.disk_usage(next(p for p in (root.resolve(), *root.resolve().parents) if p.exists())).free
            disk_bytes = 0 if demo or disks_possible() else class_hub.default_disk(len(students), free)
        elif disk == 0 or disk >= 1 / 16:
            disk_bytes = (int(disk * (1 << 30)) >> 20) << 20
        else:
            raise ValueError(f"--disk {disk:g}: 0 (no limit) or at least 1/16 GiB (64 MiB)")
        subdomains = class_hub.subdomain_host_for(subdomain_host, port, ip, https is not None, demo)
        plan = class_hub.plan_for(port, root, instructor, students, grading, proxy, demo=demo, ip=ip,
                                  https=https, limits=limits, cull_idle=cull_idle, course=course_dir,
                                  release_build=build, subdomain_host=subdomains, disk_bytes=disk_bytes,
                                  emails=tuple((p.name, p.email) for p in people if p.email))
    except ValueError as err:
        fail(str(err))
    if remove_class:
        removed = class_hub.teardown(plan)
        console.print(f"removed {plan.root} and the unix users {', '.join(removed) or '(none)'}")
        return
    if demo and ip != "127.0.0.1":
        fail("--demo takes any password: it listens on 127.0.0.1 only")
    written = class_hub.prepare(plan)
    console.print(f"wrote {written}")
    saved: list = []
    try:
        if not demo and not config_only:
            created, saved = class_hub.setup(plan)
            console.print(f"unix users: {', '.join(plan.users)} ({len(created)} created now); homes in "
                          f"{plan.root / 'home'} (0700)")
            console.print(f"one-time passwords: {plan.passwords} (root only): hand them out; each person changes "
                          "theirs at /hub/change-password")
    except class_hub.ClassNotPossible as err:
        fail(str(err))
    if config_only:
        console.print(f"start it with: {plan.python_bin / 'jupyterhub'} -f {written}")
        return

    def up(log: Path) -> None:
        console.print(f"JupyterHub: {plan.public_url}  (log: {log})")
        if plan.subdomain_host:
            console.print(f"  each server on its own origin: {plan.server_url('<name>')}")
        elif not demo:
            console.print("  every server under the hub's origin (no --subdomain-host): open no link to another "
                          "person's server (docs/hub.md)")
        sign_in = "test authenticator: any password" if demo else "NativeAuthenticator, the one-time passwords"
        console.print(f"  instructor: {plan.instructor} (formgrader); students: {', '.join(plan.students)} "
                      f"(Assignments tab); {sign_in}")
        if not demo:
            console.print(f"  each student: {plan.limits.describe()}; idle servers stop after "
                          f"{plan.cull_idle or 'never'} s")
            console.print(f"  each student's home: {plan.disk_bytes >> 20} MiB of its own, the exchange "
                          f"{plan.exchange_bytes >> 20} MiB (images in {plan.disks})" if plan.disk_bytes else
                          "  homes and the exchange on the host's filesystem, without a size limit (--disk 0, "
                          "or no loop devices here)")
        console.print(f"  exchange: {plan.exchange}; Ctrl-C stops the hub, every server and the proxy")

    try:
        raise typer.Exit(class_hub.serve(plan, up, saved))
    except class_hub.HubDidNotStart as err:
        fail(str(err))


def main() -> None:
    """Entry point for ``python -m labs.cli``."""
    app()


if __name__ == "__main__":
    main()
