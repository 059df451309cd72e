"""Long-lived runner processes, N at a time, each with the next kernel warming while one runs."""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.util import Finalize
from typing import Any

from labs.run.execute import NotebookResult, RunSpec, execute
from labs.run.forked import ZygoteAddress, kernel_zygote
from labs.run.kernels import WarmKernel, start_warm_kernel


class _KernelSupply:
    """One per runner process: hands out a warm kernel and starts the next one in the background."""

    def __init__(self, env: dict[str, str], unclaimed: Synchronized, zygote: ZygoteAddress | None) -> None:
        self.env = env
        self.unclaimed = unclaimed
        self.zygote = zygote
        self.starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernel-warmup")
        self.next: Future[WarmKernel] | None = self._start()

    def _start(self) -> Future[WarmKernel]:
        return self.starter.submit(start_warm_kernel, self.env, zygote=self.zygote)

    def take(self) -> WarmKernel:
        """The warm kernel; the next one starts now only if some notebook still waits for a runner."""
        with self.unclaimed.get_lock():
            self.unclaimed.value -= 1
            more = self.unclaimed.value > 0
        kernel = (self.next or self._start()).result()
        self.next = self._start() if more else None
        return kernel

    def close(self) -> None:
        if self.next is not None:
            try:
                self.next.result(timeout=120).shutdown()
            except Exception:  # noqa: BLE001 - a spare kernel that failed to start has nothing to shut down
                pass
        self.starter.shutdown(wait=False)


_supply: _KernelSupply | None = None


def _init_worker(env: dict[str, str], unclaimed: Synchronized, zygote: ZygoteAddress | None) -> None:
    global _supply
    _supply = _KernelSupply(env, unclaimed, zygote)
    Finalize(_supply, _supply.close, exitpriority=10)


def _run(spec: RunSpec) -> NotebookResult:
    assert _supply is not None, "runner process not initialised"
    try:
        kernel = _supply.take()
    except Exception as err:  # noqa: BLE001 - a kernel that did not start fails its notebook, not the run
        return NotebookResult(
            str(spec.notebook),
            "failed",
            0.0,
            str(spec.output),
            error=f"kernel did not start: {type(err).__name__}: {err}",
        )
    return execute(spec, kernel)


@contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Hide ``__main__``'s file while runner processes start, so multiprocessing does not re-run it in each.

    They need nothing from it, and ``__main__`` is the ``labs`` script: re-running it imports the whole
    CLI (graders, nbgrader, torch), several seconds of CPU per runner process.
    """
    main = sys.modules["__main__"]
    saved: dict[str, Any] = {
        name: main.__dict__[name] for name in ("__file__", "__spec__") if name in main.__dict__
    }
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.update(saved)


def run_all(specs: list[RunSpec], jobs: int, env: dict[str, str]) -> Iterator[NotebookResult]:
    """Execute ``specs`` on ``jobs`` runner processes; yields results as notebooks finish.

    Runner processes are forks of a forkserver that imported this module (papermill, jupyter_client)
    once; kernels are forks of one zygote for the whole run (see :mod:`labs.run.forked`), or start cold.
    """
    if not specs:
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(
        ["labs.run.pool"]
    )  # imported once, in a fresh process; each runner is a fork
    workers = min(jobs, len(specs))
    unclaimed = context.Value("i", len(specs))
    with (
        kernel_zygote(env) as zygote,
        ProcessPoolExecutor(
            workers, mp_context=context, initializer=_init_worker, initargs=(env, unclaimed, zygote)
        ) as pool,
    ):
        with _main_module_hidden():  # the runner processes start on the first submits
            futures = {pool.submit(_run, spec): spec for spec in specs}
        for future in as_completed(futures):
            spec = futures[future]
            try:
                result = future.result()
            except Exception as err:  # noqa: BLE001 - a runner process that died: report it, keep the batch going
                result = NotebookResult(
                    str(spec.notebook),
                    "failed",
                    0.0,
                    str(spec.output),
                    error=f"runner crashed: {type(err).__name__}: {err}",
                )
            yield result
