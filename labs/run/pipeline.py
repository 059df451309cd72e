"""`labs run`'s pipeline: notebooks -> shard -> papermill on warm kernels -> reports, site, timings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from graders.paths import KERNEL_CACHE, REPORT_DIR, ensure_tools_on_path
from labs.notebooks import discover, read
from labs.options import NOTEBOOK_TIMEOUT, RUN_JOBS, Shard
from labs.run import report, timings
from labs.run.execute import NotebookResult, RunSpec, kernel_env


@dataclass(frozen=True)
class RunRequest:
    """What to run and how, as the command line said it (the device already resolved)."""

    paths: list[Path]
    device: str
    smoke: bool = False
    jobs: int = RUN_JOBS
    shard: Shard | None = None
    timeout: float = NOTEBOOK_TIMEOUT
    report_dir: Path = REPORT_DIR
    timings_file: Path = timings.TIMINGS_FILE
    cache_dir: Path = KERNEL_CACHE  # the kernels' caches (inductor, matplotlib), shared by every run
    answer_leaks: bool = False  # a lesson fails when an exercise's answer is on the page before it (leaks.py)


def display_name(path: Path) -> str:
    """A notebook's name in reports and timings: relative to the working folder when inside it."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return resolved.as_posix()


def notebooks_to_run(request: RunRequest) -> list[str]:
    """The notebooks of ``request`` (each one readable), this shard's share when sharded.

    Raises :class:`labs.notebooks.BadInput` naming the file at fault, ValueError when there are none.
    """
    notebooks = discover(request.paths)
    for path in notebooks:
        read(path)
    if not notebooks:
        raise ValueError(f"no notebooks found under {', '.join(map(str, request.paths))}")
    names = [display_name(p) for p in notebooks]
    if request.shard:
        recorded = timings.load(request.timings_file).get(timings.mode_key(request.device, request.smoke), {})
        names = timings.shard(names, recorded, *request.shard)
    return names


def run_specs(request: RunRequest, names: list[str]) -> list[RunSpec]:
    """One papermill run per notebook, its output and working folder under the report folder."""
    root = request.report_dir.resolve()
    return [
        RunSpec(
            notebook=Path(n),
            output=root / "notebooks" / n.lstrip("/"),
            workdir=root / "work" / n.lstrip("/"),
            device=request.device,
            smoke=request.smoke,
            timeout=request.timeout,
            answer_leaks=request.answer_leaks,
        )
        for n in names
    ]


def execute_all(request: RunRequest, specs: list[RunSpec]) -> Iterator[NotebookResult]:
    """Run ``specs``, ``request.jobs`` at a time; results as each notebook finishes."""
    from labs.run.pool import run_all

    ensure_tools_on_path()
    env = kernel_env(request.cache_dir.resolve(), request.jobs)
    yield from run_all(specs, request.jobs, env)


def write_reports(request: RunRequest, results: list[NotebookResult]) -> list[Path]:
    """report.json and junit.xml in the report folder; their paths."""
    root = request.report_dir.resolve()
    root.mkdir(parents=True, exist_ok=True)
    settings = {
        "device": request.device,
        "smoke": request.smoke,
        "jobs": request.jobs,
        "shard": "/".join(map(str, request.shard)) if request.shard else None,
        "timeout": request.timeout,
    }
    report.write_json(results, root / "report.json", settings)
    report.write_junit(results, root / "junit.xml")
    return [root / "report.json", root / "junit.xml"]


def render_site(request: RunRequest, results: list[NotebookResult]) -> Path:
    """The executed notebooks as the static course; its index.html."""
    from labs.run.site import render_site as render

    return render(results, request.report_dir.resolve())


def record_timings(request: RunRequest, results: list[NotebookResult]) -> str:
    """Write the passed notebooks' durations to the timings file; the key they went under."""
    key = timings.mode_key(request.device, request.smoke)
    timings.record(
        timings.load(request.timings_file),
        key,
        {r.notebook: r.seconds for r in results if r.passed},
        request.timings_file,
    )
    return key


@dataclass
class RunOutcome:
    """What a run produced: a result per notebook, the reports, and the site and timings key if asked."""

    results: list[NotebookResult]
    reports: list[Path]
    site: Path | None = None
    timings_key: str | None = None

    @property
    def passed(self) -> bool:
        return all(result.passed for result in self.results)


def run_notebooks(
    request: RunRequest,
    on_start: Callable[[int], None] = lambda _: None,
    on_result: Callable[[NotebookResult], None] = lambda _: None,
    html: bool = False,
    record: bool = False,
) -> RunOutcome:
    """The whole pipeline: run every notebook, write the reports, and the site and timings when asked.

    ``on_start`` hears how many notebooks will run, ``on_result`` each result as its notebook ends.
    """
    specs = run_specs(request, notebooks_to_run(request))
    on_start(len(specs))
    results = []
    for result in execute_all(request, specs):
        on_result(result)
        results.append(result)
    outcome = RunOutcome(results, write_reports(request, results))
    if html:
        outcome.site = render_site(request, results)
    if record:
        outcome.timings_key = record_timings(request, results)
    return outcome
