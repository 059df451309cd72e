"""The grader's watch over one running job: CPU time and memory of all the job's processes together,
and a wall-clock ceiling that does not depend on anything inside the sandbox answering.

Per-process limits (RLIMIT_*) let three children of 1 GiB each hold 3 GiB; this sums them. With a
cgroup (:mod:`graders.grader.sandbox.cgroups`) the kernel caps memory and processes and the watchdog only sums
CPU from the group's counter; without one it walks the sandbox's process tree from the outside
(the grader's view, which no job can alter) and sums CPU and proportional memory (PSS) itself.

The supervisor inside the sandbox ends a job at its wall-clock limit; the ceiling here is the grader's
own, a little later: a supervisor that stopped or died without answering still frees the grader.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from graders.boundary.protocol import Status
from graders.grader.sandbox.cgroups import Group

Usage = tuple[float, int]  # CPU seconds so far, bytes of memory now
INTERVAL = 0.2
WALL_GRACE = (
    30.0  # seconds past the job's wall-clock limit before the grader stops waiting for its supervisor
)


@dataclass(frozen=True)
class Budget:
    """What one job may use, all its processes together; ``memory_bytes`` 0 when the kernel enforces it;
    ``wall_seconds``: when the grader gives up on the job (0: never)."""

    cpu_seconds: float
    memory_bytes: int
    wall_seconds: float = 0.0


def group_usage(group: Group) -> Callable[[], Usage]:
    """Usage from a cgroup's counters (memory is capped by the kernel: reported as 0)."""
    return lambda: (group.cpu_seconds(), 0)


def tree_usage(zygote_pid: int | None) -> Callable[[], Usage]:
    """Usage summed over every descendant of the zygote (the job's processes), read from /proc."""

    def measure() -> Usage:
        if zygote_pid is None:
            return 0.0, 0
        try:
            children = psutil.Process(zygote_pid).children(recursive=True)
        except psutil.Error:
            return 0.0, 0
        cpu, memory = 0.0, 0
        for child in children:
            try:
                times = child.cpu_times()
                cpu += times.user + times.system + times.children_user + times.children_system
                memory += proportional_bytes(child.pid)
            except (psutil.Error, OSError):
                continue
        return cpu, memory

    return measure


def proportional_bytes(pid: int) -> int:
    """A process's PSS: pages it shares with n others (the zygote's, copy-on-write) count 1/n."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return psutil.Process(pid).memory_info().rss


class Watchdog:
    """Polls ``measure`` while a job runs; calls ``kill`` once when the job goes over ``budget``."""

    def __init__(self, budget: Budget, measure: Callable[[], Usage], kill: Callable[[], None]) -> None:
        self.budget, self.measure, self.kill = budget, measure, kill
        self.verdict: Status | None = None
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._start_cpu = measure()[0]
        self._deadline = time.monotonic() + budget.wall_seconds if budget.wall_seconds else float("inf")
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(INTERVAL):
            cpu, memory = self.measure()
            self.peak_bytes = max(self.peak_bytes, memory)
            if cpu - self._start_cpu > self.budget.cpu_seconds:
                self.verdict = Status.CPU_LIMIT
            elif self.budget.memory_bytes and memory > self.budget.memory_bytes:
                self.verdict = Status.MEMORY_LIMIT
            elif time.monotonic() > self._deadline:
                self.verdict = Status.TIMEOUT
            if self.verdict:
                self.kill()
                return

    def stop(self) -> Status | None:
        """End the watch; the limit the job broke, or None."""
        self._stop.set()
        self._thread.join()
        return self.verdict
