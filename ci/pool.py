"""Long-lived runner processes, N at a time, each with the next kernel warming while one runs."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.util import Finalize

from ci.kernels import WarmKernel, start_warm_kernel
from ci.runner import NotebookResult, RunSpec, execute


class _KernelSupply:
    """One per runner process: hands out a warm kernel and starts the next one in the background."""

    def __init__(self, env: dict[str, str], unclaimed: Synchronized) -> None:
        self.env = env
        self.unclaimed = unclaimed
        self.starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernel-warmup")
        self.next: Future[WarmKernel] | None = self.starter.submit(start_warm_kernel, env)

    def take(self) -> WarmKernel:
        """The warm kernel; the next one starts now only if some notebook still waits for a runner."""
        with self.unclaimed.get_lock():
            self.unclaimed.value -= 1
            more = self.unclaimed.value > 0
        kernel = (self.next or self.starter.submit(start_warm_kernel, self.env)).result()
        self.next = self.starter.submit(start_warm_kernel, self.env) if more else None
        return kernel

    def close(self) -> None:
        if self.next is not None:
            try:
                self.next.result(timeout=120).shutdown()
            except Exception:
                pass
        self.starter.shutdown(wait=False)


_supply: _KernelSupply | None = None


def _init_worker(env: dict[str, str], unclaimed: Synchronized) -> None:
    global _supply
    _supply = _KernelSupply(env, unclaimed)
    Finalize(_supply, _supply.close, exitpriority=10)


def _run(spec: RunSpec) -> NotebookResult:
    assert _supply is not None, "runner process not initialised"
    try:
        kernel = _supply.take()
    except Exception as err:
        return NotebookResult(str(spec.notebook), "failed", 0.0, str(spec.output),
                              error=f"kernel did not start: {type(err).__name__}: {err}")
    return execute(spec, kernel)


def run_all(specs: list[RunSpec], jobs: int, env: dict[str, str],
            on_done: Callable[[NotebookResult], None] = lambda r: None) -> Iterator[NotebookResult]:
    """Execute ``specs`` on ``jobs`` runner processes; yields results as notebooks finish."""
    if not specs:
        return
    context = multiprocessing.get_context("spawn")
    workers = min(jobs, len(specs))
    unclaimed = context.Value("i", len(specs))
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker,
                             initargs=(env, unclaimed)) as pool:
        futures = {pool.submit(_run, spec): spec for spec in specs}
        for future in as_completed(futures):
            spec = futures[future]
            try:
                result = future.result()
            except Exception as err:  # a runner process that died: report it, keep the batch going
                result = NotebookResult(str(spec.notebook), "failed", 0.0, str(spec.output),
                                        error=f"runner crashed: {type(err).__name__}: {err}")
            on_done(result)
            yield result
