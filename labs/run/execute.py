"""Execute one notebook with papermill on a warm kernel, and classify what happened."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
import papermill
from nbclient.exceptions import DeadKernelError
from papermill.exceptions import PapermillExecutionError

from graders.coursedir import is_lab
from labs.notebooks import parameters
from labs.run import skips
from labs.run.kernels import WarmKernel

ANSWERS_FILE = "LABS_ANSWERS"  # labutils.exercises.ANSWERS_FILE: the kernel need not import labutils here
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class RunSpec:
    """What to run and how: one notebook, its parameters and its limits."""

    notebook: Path
    output: Path
    workdir: Path
    device: str
    smoke: bool
    timeout: float
    answer_leaks: bool = False  # a lesson fails when an exercise's answer is on the page before it (leaks.py)

    @property
    def answers_file(self) -> Path:
        """Where the lesson's checks record their answers (``$LABS_ANSWERS``) when answer leaks are read."""
        return self.workdir / "answers.jsonl"


@dataclass
class NotebookResult:
    """The outcome of one notebook: ``status`` is passed, failed, timeout or killed."""

    notebook: str
    status: str
    seconds: float
    output: str
    peak_rss_mb: float | None = None
    cuda_peak_mb: float | None = None
    code_cells: int = 0
    executed_cells: int = 0
    cell: int | None = None
    error: str | None = None
    skipped: list[dict] = field(default_factory=list)  # declared skips: {"cell": i, "why": text}

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict:
        return asdict(self)


def execute(spec: RunSpec, kernel: WarmKernel) -> NotebookResult:
    """Run ``spec.notebook`` on ``kernel`` (which this call consumes and shuts down)."""
    spec.output.parent.mkdir(parents=True, exist_ok=True)
    spec.workdir.mkdir(parents=True, exist_ok=True)
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        kernel.kill()

    watchdog = threading.Timer(spec.timeout, stop)
    failure: tuple[int | None, str] | None = None
    extra: dict = {}
    start = time.perf_counter()
    if spec.answer_leaks:
        spec.answers_file.unlink(missing_ok=True)
    try:
        kernel.ready(
            spec.workdir, environ={ANSWERS_FILE: str(spec.answers_file)} if spec.answer_leaks else None
        )
        start = time.perf_counter()
        watchdog.start()
        papermill.execute_notebook(
            str(spec.notebook),
            str(spec.output),
            parameters=parameters(spec.device, spec.smoke),
            kernel_name="python3",
            km=kernel.manager,
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=True,
        )
    except PapermillExecutionError as err:
        failure = (_source_index(err.cell_index), f"{err.ename}: {ANSI.sub('', str(err.evalue))}".strip())
    except DeadKernelError:
        failure = (None, "kernel died")
    except Exception as err:  # noqa: BLE001 - a kernel that could not start, a timeout waiting for a reply
        failure = (None, f"{type(err).__name__}: {ANSI.sub('', str(err))}".splitlines()[0])
    finally:
        watchdog.cancel()
    seconds = time.perf_counter() - start
    rss = kernel.peak_rss_bytes()
    if failure is None or failure[1] != "kernel died":
        extra = kernel.postlude()
    kernel.shutdown()
    result = _classify(spec, seconds, failure, timed_out.is_set(), rss, extra)
    if spec.answer_leaks and result.passed and not is_lab(spec.notebook):
        _read_leaks(spec, result)
    return result


def _read_leaks(spec: RunSpec, result: NotebookResult) -> None:
    """Fail ``result`` when an exercise's answer was on the page before the prediction."""
    from labs.run import leaks  # labutils.exercises: torch

    try:
        found = leaks.leaks_in(spec.output, spec.answers_file)
    except ValueError as err:
        result.status, result.error = "failed", f"answer leaks not read: {err}"
        return
    if found:
        result.status, result.cell = "failed", _source_index(found[0].exercise)
        result.error = "; ".join(leak.message(_source_index) for leak in found)


def _classify(
    spec: RunSpec,
    seconds: float,
    failure: tuple[int | None, str] | None,
    timed_out: bool,
    rss: int | None,
    extra: dict,
) -> NotebookResult:
    code_cells, executed, skipped = _read_back(spec.output)
    peak = max(rss or 0, (extra.get("children_rss_kb") or 0) * 1024) or None
    result = NotebookResult(
        notebook=str(spec.notebook),
        status="passed",
        seconds=round(seconds, 3),
        output=str(spec.output),
        peak_rss_mb=round(peak / 2**20, 1) if peak else None,
        cuda_peak_mb=round(extra["cuda_peak_bytes"] / 2**20, 1) if extra.get("cuda_peak_bytes") else None,
        code_cells=code_cells,
        executed_cells=executed,
        skipped=[s.to_dict() for s in skipped],
    )
    if timed_out:
        result.status, result.error = "timeout", f"timed out after {spec.timeout:g} s (kernel killed)"
        result.cell = _last_started_cell(spec.output)
    elif failure and failure[1] == "kernel died":
        result.status, result.error = "killed", "kernel died (killed: out of memory or a signal)"
        result.cell = _last_started_cell(spec.output)
    elif failure:
        result.status, (result.cell, result.error) = "failed", failure
    elif executed == 0:
        result.status, result.error = "failed", "silent skip: no code cell was executed"
    elif executed < code_cells:
        result.status, result.error = (
            "failed",
            f"silent skip: {code_cells - executed} of {code_cells} code cells not executed",
        )
    return result


def _source_index(cell_index: int) -> int:
    """Papermill inserts its injected-parameters cell after cell 0; map back to the source's numbering."""
    return cell_index - 1 if cell_index >= 2 else cell_index


def _read_back(output: Path) -> tuple[int, int, list[skips.Skip]]:
    """Code cells with code, how many of them ran, and the skips they declared."""
    try:
        nb = nbformat.read(output, as_version=4)
    except (OSError, ValueError):
        return 0, 0, []
    cells = [
        c
        for c in nb.cells
        if c.cell_type == "code"
        and c.source.strip()
        and skips.PARAMETERS_TAG not in c.metadata.get("tags", [])
    ]
    executed = [c for c in cells if c.get("execution_count") is not None]
    return len(cells), len(executed), skips.declared(nb)


def _last_started_cell(output: Path) -> int | None:
    """The source index of the last cell papermill started: the one running when the kernel died."""
    try:
        nb = nbformat.read(output, as_version=4)
    except (OSError, ValueError):
        return None
    started = [i for i, c in enumerate(nb.cells) if c.metadata.get("papermill", {}).get("start_time")]
    return _source_index(started[-1]) if started else None


def kernel_env(cache_root: Path, jobs: int = 1) -> dict[str, str]:
    """Environment of notebook kernels: caches inside the build folder, fixed hash seed, and
    intra-op threads split between the notebooks that run at once (unless OMP_NUM_THREADS is set)."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))
    env.update(
        {
            "TORCHINDUCTOR_CACHE_DIR": str(cache_root / "inductor"),
            "TRITON_CACHE_DIR": str(cache_root / "triton"),
            "MPLCONFIGDIR": str(cache_root / "matplotlib"),
            "PYTHONHASHSEED": "0",
            "LABS_RUNNER": "1",
            "LABS_KERNEL_LOG": str(cache_root / "kernels.log"),  # native (C++) output of forked kernels
        }
    )
    env.pop("MPLBACKEND", None)
    return env
