"""The authors' commands: `labs new chapter|lab` scaffolds, `labs lint` checks the conventions, `labs check`
self-checks the labs' grading (docs/authoring.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from graders import paths as defaults
from labs.commands.common import (
    DEFAULT_PATHS,
    ChaptersArg,
    CourseOpt,
    ExercisesOpt,
    PathsArg,
    RightDirOpt,
    WrongDirOpt,
    chapter_folders,
    isolation_warning,
    quiet_nbgrader,
)
from labs.console import console, err_console, fail

if TYPE_CHECKING:  # torch and nbgrader load only once a command needs them
    from graders.check.selfcheck import ChapterCheck, SolutionFolders


def new_chapter(
    name: Annotated[str, typer.Argument(help="NN_topic, e.g. 06_tricks")],
    exercise: ExercisesOpt = None,
    course_dir: CourseOpt = defaults.COURSE,
    wrong_dir: WrongDirOpt = defaults.WRONG_SOLUTIONS,
) -> None:
    """A chapter folder with a lesson and a lab (lab_<topic>), its probes and wrong solutions."""
    from labs import scaffold

    try:
        written = scaffold.chapter_files(course_dir, wrong_dir, name, exercise or []).write()
    except scaffold.ScaffoldError as err:
        fail(str(err))
    _print_written(written)


def new_lab(
    chapter: Annotated[str, typer.Argument(help="an existing chapter folder name")],
    name: Annotated[str, typer.Argument(help="the lab is lab_<name>.ipynb")],
    exercise: ExercisesOpt = None,
    course_dir: CourseOpt = defaults.COURSE,
    wrong_dir: WrongDirOpt = defaults.WRONG_SOLUTIONS,
) -> None:
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


def lint(
    paths: PathsArg = None,
    fix: Annotated[bool, typer.Option("--fix", help="strip outputs and normalise metadata")] = False,
    learner_rules: Annotated[
        bool,
        typer.Option(
            "--learner-rules/--no-learner-rules",
            help="each lesson fits "
            "one sitting, each lab uses only torch names a lesson showed "
            "(docs/authoring.md; on by default)",
        ),
    ] = True,
) -> None:
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


def check(
    chapters: ChaptersArg = None,
    course_dir: CourseOpt = defaults.COURSE,
    wrong_dir: WrongDirOpt = defaults.WRONG_SOLUTIONS,
    right_dir: RightDirOpt = defaults.RIGHT_SOLUTIONS,
    build: Annotated[Path, typer.Option(help="scratch nbgrader courses")] = defaults.CHECK_BUILD,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="sandboxes in parallel")] = 2,
    sandbox: Annotated[
        bool,
        typer.Option(
            "--sandbox/--no-sandbox",
            help="--no-sandbox: grade without bubblewrap "
            "(a quick try while writing probes, or where bwrap is missing)",
        ),
    ] = True,
    min_exercises: Annotated[int | None, typer.Option(help="graded exercises every lab must have")] = None,
    min_points: Annotated[float | None, typer.Option(help="points every lab must be worth")] = None,
    min_wrong: Annotated[int | None, typer.Option(help="wrong solutions every exercise must have")] = None,
    mutants: Annotated[
        bool,
        typer.Option(
            "--mutants",
            help="instead: mutation-test each reference solution (stale results only; docs/authoring.md)",
        ),
    ] = False,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="write each lab's verdicts next to its probes "
            "(<lab>.selfcheck.json, what make test checks is current)",
        ),
    ] = False,
    salts: Annotated[
        int,
        typer.Option(
            "--salts",
            help="grade every version under N fresh salts: each verdict "
            "must hold under every one (N times the time)",
        ),
    ] = 1,
) -> None:
    """Lab self-check, graded like `labs grade`: source = full, release = zero, wrong solutions lose, right ones earn."""
    folders = chapter_folders(chapters, course_dir, with_labs=True)
    if jobs < 1 or salts < 1:
        fail("--jobs and --salts must be at least 1")
    if mutants:
        _check_mutants(folders, build, jobs, sandbox)
    # torch and nbgrader load only once the arguments are known to be good
    from graders.check.selfcheck import SolutionFolders, Standard, check_chapters
    from labs.tables import print_chapter_check

    quiet_nbgrader()
    if sandbox:
        isolation_warning()
    else:
        err_console.print("labs check --no-sandbox: submissions run without bubblewrap", style="yellow")
    default = Standard()
    standard = Standard(
        default.exercises if min_exercises is None else min_exercises,
        default.points if min_points is None else min_points,
        default.wrong_per_exercise if min_wrong is None else min_wrong,
    )
    results = check_chapters(
        folders, build.resolve(), SolutionFolders.found(wrong_dir, right_dir), jobs, standard, sandbox, salts
    )
    for result in results:
        print_chapter_check(result)
    if record:
        _record_checks(folders, results, SolutionFolders.found(wrong_dir, right_dir))
    ok = all(r.ok for r in results)
    console.print(
        f"{sum(r.ok for r in results)}/{len(results)} chapters pass the self-check",
        style="green" if ok else "red",
    )
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
        isolation_warning()
    reports = check_mutants(
        folders,
        (build / "mutants").resolve(),
        jobs,
        sandbox,
        lambda line: console.print(line, markup=False, highlight=False),
    )
    for report in reports:
        for line in report_lines(report):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    ok = all(r.ok for r in reports)
    console.print(
        f"{sum(r.ok for r in reports)}/{len(reports)} labs meet the mutation target",
        style="green" if ok else "red",
    )
    raise typer.Exit(0 if ok else 1)
