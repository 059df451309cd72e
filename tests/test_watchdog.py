"""The grader's watchdog on its own: limits over the sum of a job's processes, and its wall-clock ceiling."""

from __future__ import annotations

import threading

from graders.boundary.protocol import Status
from graders.grader.sandbox.watchdog import Budget, Watchdog


def _watch(budget: Budget, usage: tuple[float, int]) -> Status | None:
    killed = threading.Event()
    watch = Watchdog(budget, lambda: usage, killed.set)
    assert killed.wait(5), "the watchdog never acted"
    return watch.stop()


def test_wall_ceiling_stops_a_job_that_uses_nothing():
    assert _watch(Budget(cpu_seconds=100, memory_bytes=0, wall_seconds=0.3), (0.0, 0)) is Status.TIMEOUT


def test_memory_over_budget_is_memory_limit():
    assert _watch(Budget(cpu_seconds=100, memory_bytes=10, wall_seconds=60), (0.0, 11)) is Status.MEMORY_LIMIT


def test_no_ceiling_and_within_budget_never_kills():
    killed = threading.Event()
    watch = Watchdog(Budget(cpu_seconds=100, memory_bytes=10), lambda: (0.0, 5), killed.set)
    assert not killed.wait(0.6)
    assert watch.stop() is None
