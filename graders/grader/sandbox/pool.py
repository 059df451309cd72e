"""Sandbox workers for a batch: what their zygotes import, the pool that hands them out, and the two pools
`labs grade` runs (the references' and the students'), started before the grader itself imports torch.

Nothing here imports torch or reads a result: a batch starts its sandboxes first, so that their zygotes warm
up while the grader loads the labs (the pools' users, :mod:`graders.grader.grading`, decode and score).
"""

from __future__ import annotations

import ast
import queue
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from graders.boundary.protocol import Job, Limits
from graders.grader.parsing import parsed
from graders.grader.sandbox.worker import JobOutcome, Worker


def modules_imported_by(sources: Iterable[str]) -> tuple[str, ...]:
    """Modules the code in ``sources`` imports (and names it imports from a module, which may be
    submodules): the sandboxes import them once, before any job. Code that does not parse adds nothing."""
    found: set[str] = set()
    for source in sources:
        tree = parsed(source)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                # ``from labutils import digits`` imports a submodule: a name that is not one fails to preload, harmlessly
                found.update(f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*")
        if "assert_close" in source:
            found.add("torch.testing")
        if "torch.onnx.export" in source:
            found.add("torch.onnx")  # the sandboxes also run one export: its first costs 3-4 s
    return tuple(sorted(found))


class Pool:
    """Sandbox workers handed out to threads, one job each at a time."""

    def __init__(
        self,
        size: int,
        limits: Limits,
        threads: int,
        use_bwrap: bool,
        log_dir: Path,
        warm: tuple[str, ...] = (),
    ) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.workers = [
            Worker(i, limits, threads, use_bwrap, log_dir / f"worker{i}.log", warm) for i in range(size)
        ]
        self.free: queue.Queue[Worker] = queue.Queue()
        self.gate = threading.Condition()
        self.running, self.exclusive_running = 0, False
        for worker in self.workers:  # from this thread: a sandbox dies with the thread that started it
            worker.spawn()

    def ready(self) -> Pool:
        """Wait until every sandbox has warmed up; returns the pool."""
        for worker in self.workers:
            worker.wait_ready()
            self.free.put(worker)
        return self

    def run(self, job: Job, exclusive: bool = False) -> JobOutcome:
        """Run ``job`` on a free sandbox; an ``exclusive`` job runs with no other job beside it."""
        with self.gate:
            self.gate.wait_for(lambda: not self.exclusive_running and (not exclusive or self.running == 0))
            self.running += 1
            self.exclusive_running = exclusive
        worker = self.free.get()
        try:
            return worker.run(job)
        finally:
            self.free.put(worker)
            with self.gate:
                self.running -= 1
                self.exclusive_running = self.exclusive_running and not exclusive
                self.gate.notify_all()

    def close(self) -> None:
        """Stop every sandbox and delete its cgroup."""
        for worker in self.workers:
            worker.close()


@dataclass
class Sandboxes:
    """A batch's two pools: the references run in one, shut down before the students' first job."""

    reference: Pool
    students: Pool

    def close(self) -> None:
        """Stop both pools (closing one twice is harmless)."""
        self.reference.close()
        self.students.close()


def start_sandboxes(
    warm: tuple[str, ...],
    labs: int,
    submissions: int,
    jobs: int,
    limits: Limits,
    use_bwrap: bool,
    log_dir: Path,
) -> Sandboxes:
    """Spawn (not wait for) a reference sandbox per lab and a student sandbox per job, up to ``jobs`` each."""
    reference = Pool(max(1, min(labs, jobs)), limits, 1, use_bwrap, log_dir / "reference", warm)
    try:
        students = Pool(max(1, min(jobs, submissions)), limits, 1, use_bwrap, log_dir, warm)
    except BaseException:
        reference.close()
        raise
    return Sandboxes(reference, students)
