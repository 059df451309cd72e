"""CI's commands: `labs run` executes notebooks (papermill on warm kernels), `labs run-merge` joins its shards."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from graders import paths as defaults
from labs.commands.common import DEFAULT_PATHS, PathsArg, checked_device
from labs.console import console, fail, progress_bar
from labs.options import NOTEBOOK_TIMEOUT, RUN_JOBS, parse_shard

if TYPE_CHECKING:
    from labs.run.report import NotebookResult


def run(
    paths: PathsArg = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="notebooks executed at once")] = RUN_JOBS,
    device: Annotated[str, typer.Option(help="auto, cpu or cuda (injected as DEVICE)")] = "auto",
    smoke: Annotated[bool, typer.Option("--smoke", help="inject SMOKE=True: tiny sizes")] = False,
    shard: Annotated[str | None, typer.Option(help="run only shard i/n, split by recorded duration")] = None,
    timeout: Annotated[
        float, typer.Option(help="seconds per notebook before its kernel is killed")
    ] = NOTEBOOK_TIMEOUT,
    report_dir: Annotated[
        Path, typer.Option("--report", help="folder for executed notebooks and reports")
    ] = (defaults.REPORT_DIR),
    cache_dir: Annotated[Path, typer.Option("--cache", help="the kernels' caches (inductor, matplotlib)")] = (
        defaults.KERNEL_CACHE
    ),
    record_timings: Annotated[
        bool, typer.Option("--record-timings", help="write durations to the timings file")
    ] = False,
    timings_file: Annotated[
        Path | None, typer.Option("--timings", help="recorded durations (for --shard)")
    ] = None,
    html: Annotated[
        bool, typer.Option("--html/--no-html", help="render the executed notebooks as a static site")
    ] = False,
    answer_leaks: Annotated[
        bool,
        typer.Option(
            "--answer-leaks",
            help="fail a lesson that shows an exercise's answer "
            "between its heading and the exercise (docs/authoring.md)",
        ),
    ] = False,
) -> None:
    """Execute notebooks with papermill, N at a time, and write report.json and junit.xml."""
    from labs.notebooks import BadInput, discover
    from labs.run import report, timings
    from labs.run.pipeline import RunRequest, run_notebooks

    try:
        discover(
            paths or DEFAULT_PATHS
        )  # a path that is not there is said before the device check loads torch
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
    request = RunRequest(
        paths or DEFAULT_PATHS,
        checked_device(device),
        smoke,
        jobs,
        shard_spec,
        timeout,
        report_dir,
        timings_file or timings.TIMINGS_FILE,
        cache_dir,
        answer_leaks,
    )
    with progress_bar("notebooks", console, transient=True) as bar:

        def started(count: int) -> None:
            bar.total(count)
            console.print(
                f"labs run: {count} notebooks, jobs={jobs}, device={request.device}, smoke={smoke}"
                + (f", shard {shard}" if shard else "")
            )

        def finished(result: NotebookResult) -> None:
            bar.advance()
            console.print(f"{result.status:>7}  {result.seconds:6.1f}s  {result.notebook}")

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


def run_merge(
    shards: Annotated[
        list[Path], typer.Argument(help="the report folders of `labs run --shard i/n`, one per shard")
    ],
    report_dir: Annotated[
        Path, typer.Option("--report", help="folder for the merged reports")
    ] = defaults.REPORT_DIR,
    html: Annotated[
        bool, typer.Option("--html/--no-html", help="render the merged notebooks as a static site")
    ] = False,
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
