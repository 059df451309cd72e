"""`labs check --mutants`: every stale mutant of each lab graded the way `labs check` grades a wrong
solution (the source with that solution cell replaced, run in the sandbox up to its exercise, its probes
compared with a reference run of a fresh salt), in parallel on one pool, each run read by
:mod:`graders.check.mutants_verdict`; then each exercise judged against the target (:mod:`graders.check.mutants_ledger`).
A mutant is killed only when it loses points under each of :data:`~graders.check.mutants_verdict.SALTS` fresh
salts: the runs stop at the first salt whose verdict no other salt could change.

Before its mutants, each exercise's unchanged source is graded the same way and must earn full marks,
or none of its verdicts would mean anything. The reference and these controls run under the grading
budget; a lab's mutants under :data:`~graders.check.mutants_verdict.LIMITS` or, when its slowest control needs
more, a multiple of that control's CPU and wall time (:func:`mutant_limits`): a mutant that loops forever
still ends, and a lab whose honest run is slow is not killed for being itself.
"""

from __future__ import annotations

import difflib
import math
import resource
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from graders.boundary.job_result import JobResult
from graders.boundary.protocol import Limits
from graders.check import mutants_ledger as ledger
from graders.check.cuts import may_cut
from graders.check.mutants import Mutant
from graders.check.mutants_verdict import (
    LIMITS,
    SALTS,
    before_running,
    needs_another_salt,
    verdict_of,
    verdict_over_salts,
)
from graders.check.selfcheck import with_solution_replaced
from graders.coursedir import labs_in
from graders.grader.grading import Lab, Pool, focused, grade_one, load_lab, reference_runs, warm_modules
from graders.grader.results import NotebookGrade
from graders.grader.submissions import Submission
from graders.grader.vetting import imported_names

# The reference and the controls: the grading budget (what `labs grade` gives a submission), same memory.
CONTROL_LIMITS = replace(LIMITS, wall_seconds=Limits().wall_seconds, cpu_seconds=Limits().cpu_seconds)
CPU_FACTOR, WALL_FACTOR = 3, 4  # a mutant may use this many times its slowest control's CPU and wall time
SAVE_EVERY = 20  # verdicts between two saves of a lab's results, so that a stopped run keeps its work


def mutant_limits(control_cpu: float, control_wall: float) -> Limits:
    """What a lab's mutants run under: :data:`LIMITS`, raised to a multiple of its slowest control."""
    return replace(
        LIMITS,
        cpu_seconds=max(LIMITS.cpu_seconds, math.ceil(CPU_FACTOR * control_cpu)),
        wall_seconds=max(LIMITS.wall_seconds, math.ceil(WALL_FACTOR * control_wall)),
    )


@contextmanager
def limits_of(pool: Pool, limits: Limits) -> Iterator[None]:
    """Every worker of an idle ``pool`` runs its next jobs under ``limits``, until the block ends (each job
    sends its worker's limits with it; the memory limit is the same in both, as the cgroup's is set once)."""
    before = [worker.limits for worker in pool.workers]
    assert all(b.memory_bytes == limits.memory_bytes for b in before), (
        "the cgroup keeps its first memory limit"
    )
    for worker in pool.workers:
        worker.limits = limits
    try:
        yield
    finally:
        for worker, old in zip(pool.workers, before, strict=True):
            worker.limits = old


@dataclass
class LabMutants:
    """One lab's mutation figures, and what its run cost."""

    chapter: str
    lab: str
    exercises: list[ledger.Exercise]
    scores: list[ledger.ExerciseScore] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    graded: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the sandboxed jobs' CPU time

    @property
    def ok(self) -> bool:
        """Every exercise meets the target and nothing else is wrong (a failing control, a bad list)."""
        return not self.problems and all(s.ok for s in self.scores)


@dataclass(frozen=True)
class Plan:
    """One run: an exercise, the code put in its solution cell, and whether the run may end after its
    tests (worked out before any thread starts)."""

    exercise: ledger.Exercise
    code: str
    cut: bool
    mutant: Mutant | None = None  # None: the control, the unchanged source


@dataclass
class Grading:
    """What grading one lab's mutants needs: the pool, the lab, this run's salts and a reference of each."""

    pool: Pool
    lab: Lab
    path: Path
    references: list[tuple[int, JobResult]]  # (salt, the reference run under it)
    progress: Callable[[], None] = lambda: None
    record: Callable[[str, dict], None] = lambda mutant_id, verdict: None

    def plan(self, ex: ledger.Exercise, mutant: Mutant | None = None) -> Plan:
        """The run of ``mutant`` (the control: the unchanged source, when None); parses, so not in a thread."""
        code = mutant.source if mutant else ex.reference
        return Plan(ex, code, may_cut(self.lab.source, ex.tests[-1], code), mutant)

    def run(self, plan: Plan, salt_index: int = 0) -> NotebookGrade:
        """The source with the plan's solution cell, graded on its exercise's tests alone under one of the
        run's salts."""
        nb = with_solution_replaced(self.lab.source, plan.exercise.grade_id, plan.code)
        graded_lab = focused(self.lab, plan.exercise.tests, plan.cut)
        sub = Submission("mutant", self.lab.chapter, self.lab.name, self.path, nb)
        salt, reference = self.references[salt_index]
        return grade_one(self.pool, graded_lab, sub, reference, salt)

    def control(self, plan: Plan) -> tuple[str, NotebookGrade]:
        """Why the unchanged source fails its own exercise under some salt (empty when it earns full marks
        under each), and its slowest run."""
        runs = [self.run(plan, i) for i in range(len(self.references))]
        for graded in runs:
            short = [
                f"{c.grade_id} {c.score:g}/{c.points:g} ({c.why}; {c.detail})"
                for c in graded.cells
                if c.score < c.points
            ]
            if short or graded.error:
                return (
                    f"{plan.exercise.grade_id}: the unchanged source loses points: "
                    f"{'; '.join(short) or graded.error}"
                ), graded
        return "", max(runs, key=lambda g: g.seconds)

    def mutant(self, plan: Plan) -> tuple[dict | None, float]:
        """One mutant's record (verdict, hash, note), from its runs under the salts in turn, and their CPU-s."""
        mutant = plan.mutant
        if mutant is None:
            raise ValueError(f"{plan.exercise.grade_id}: a control run has no mutant to record")
        verdicts: list[dict] = []
        cpu = 0.0
        for salt_index in range(len(self.references)):
            graded = self.run(plan, salt_index)
            cpu += graded.cpu_seconds
            verdict = verdict_of(graded)
            if verdict is None:
                self.progress()
                return None, cpu
            verdicts.append(verdict)
            if not needs_another_salt(verdict):
                break
        record = {**verdict_over_salts(verdicts), "hash": plan.exercise.mutant_hash(mutant)}
        self.record(mutant.id, record)
        self.progress()
        return record, cpu


def grade_lab(
    pool: Pool,
    path: Path,
    todo: list[tuple[ledger.Exercise, Mutant]],
    results: dict[str, dict],
    jobs: int,
    say: Callable[[str], None] = lambda line: None,
    save: Callable[[], object] = lambda: None,
) -> tuple[list[str], int, float]:
    """Grade ``todo`` into ``results`` (``save`` called every :data:`SAVE_EVERY` verdicts and at the end);
    the problems met (a control that fails), runs made, their CPU-s."""
    lab = load_lab(path)
    salts = [secrets.randbits(62) for _ in range(SALTS)]
    references = [
        (salt, reference_runs(pool, {(lab.chapter, lab.name): lab}, salt)[(lab.chapter, lab.name)])
        for salt in salts
    ]
    modules = imported_names(tuple(c.source for c in lab.source.cells if c.cell_type == "code"))
    grading = Grading(pool, lab, path, references, _every(50, len(todo), say), _recorder(results, save))
    for ex, mutant in todo:
        early = before_running(mutant, modules)
        results.update({mutant.id: {**early, "hash": ex.mutant_hash(mutant)}} if early else {})
    controls = [grading.plan(ex) for ex in {ex.grade_id: ex for ex, _ in todo}.values()]
    with ThreadPoolExecutor(jobs) as running:
        checked = list(running.map(grading.control, controls))
        broken = {plan.exercise.grade_id for plan, (why, _) in zip(controls, checked, strict=True) if why}
        plans = [
            grading.plan(ex, m)
            for ex, m in todo
            if ex.grade_id not in broken and results.get(m.id, {}).get("hash") != ex.mutant_hash(m)
        ]
        limits = mutant_limits(
            max((g.cpu_seconds for _, g in checked), default=0.0),
            max((g.seconds for _, g in checked), default=0.0),
        )
        if limits != LIMITS:
            say(
                f"  mutants run under {limits.cpu_seconds} CPU-s and {limits.wall_seconds:g} s "
                f"({CPU_FACTOR}x and {WALL_FACTOR}x its slowest control)"
            )
        with limits_of(pool, limits):
            graded = list(running.map(grading.mutant, plans))
    save()
    problems = [why for why, _ in checked if why]
    problems += [
        f"{plan.mutant.id}: the grader failed on it (not recorded)"
        for plan, (record, _) in zip(plans, graded, strict=True)
        if record is None and plan.mutant
    ]
    return (
        problems,
        len(checked) + len(graded),
        sum(g.cpu_seconds for _, g in checked) + sum(c for _, c in graded),
    )


def _recorder(results: dict[str, dict], save: Callable[[], object]) -> Callable[[str, dict], None]:
    """A thread-safe way to put one verdict into ``results``, saving them every :data:`SAVE_EVERY`."""
    lock, count = threading.Lock(), [0]

    def record(mutant_id: str, verdict: dict) -> None:
        with lock:
            results[mutant_id] = verdict
            count[0] += 1
            if count[0] % SAVE_EVERY == 0:
                save()

    return record


def _every(step: int, total: int, say: Callable[[str], None]) -> Callable[[], None]:
    """A thread-safe counter that says how far it got every ``step`` calls."""
    lock, count = threading.Lock(), [0]

    def tick() -> None:
        with lock:
            count[0] += 1
            if count[0] % step == 0:
                say(f"  graded {count[0]} of {total}")

    return tick


def check_mutants(
    chapter_dirs: list[Path],
    build_root: Path,
    jobs: int,
    sandbox: bool = True,
    say: Callable[[str], None] = lambda line: None,
) -> list[LabMutants]:
    """Each lab's mutation figures, grading only the mutants whose committed results are stale (and
    committing the new results next to the probes)."""
    paths = [path for folder in chapter_dirs for path in labs_in(folder)]
    found = {path: ledger.exercises(path) for path in paths}
    results = {path: ledger.read_results(path) for path in paths}
    todo = {path: ledger.stale(found[path], results[path]) for path in paths}
    pool = None
    if any(todo.values()):
        labs = [load_lab(path) for path in paths if todo[path]]
        pool = Pool(jobs, CONTROL_LIMITS, 1, sandbox, build_root / "logs", warm_modules(labs)).ready()
    try:
        return [_lab_mutants(pool, path, found[path], results[path], todo[path], jobs, say) for path in paths]
    finally:
        if pool is not None:
            pool.close()


def _lab_mutants(
    pool: Pool | None,
    path: Path,
    found: list[ledger.Exercise],
    results: dict[str, dict],
    todo: list[tuple[ledger.Exercise, Mutant]],
    jobs: int,
    say: Callable[[str], None],
) -> LabMutants:
    """One lab: grade its stale mutants on ``pool``, write the results next to its probes, judge them."""
    report = LabMutants(path.parent.name, path.stem, found)
    total = sum(len(ex.mutants) for ex in found)
    say(f"{report.chapter}/{report.lab}: {total} mutants, {len(todo)} to grade")
    if todo and pool is not None:
        start, own = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
        report.problems, report.graded, report.cpu_seconds = grade_lab(
            pool, path, todo, results, jobs, say, lambda: ledger.write_results(path, found, results)
        )
        used = resource.getrusage(resource.RUSAGE_SELF)
        report.cpu_seconds += used.ru_utime + used.ru_stime - own.ru_utime - own.ru_stime
        report.seconds = time.monotonic() - start
    if todo or set(results) - {
        m.id for ex in found for m in ex.mutants
    }:  # new verdicts, or ids no longer made
        ledger.write_results(path, found, results)
    try:
        scores, problems = ledger.score(found, results, ledger.read_equivalents(path))
    except ValueError as err:
        scores, problems = [], [str(err)]
    report.scores, report.problems = scores, report.problems + problems
    return report


def survivor_diff(reference: str, mutant: Mutant) -> str:
    """A survivor as a unified diff of its solution cell."""
    return "".join(
        difflib.unified_diff(
            reference.splitlines(keepends=True),
            mutant.source.splitlines(keepends=True),
            f"{mutant.exercise} (reference)",
            mutant.id,
            n=1,
        )
    )


def report_lines(report: LabMutants) -> list[str]:
    """Per exercise its figures, then every survivor as a diff, then each failure in one line."""
    lines = [
        f"{report.chapter}/{report.lab}: exercise, mutants, killed, stillborn, equivalent, survivors, kill rate"
    ]
    lines += [
        f"  {s.exercise}: {s.mutants}, {s.killed}, {s.stillborn}, {s.equivalent}, {len(s.survivors)}, "
        f"{s.rate:.1%}" + (f" ({len(s.stale)} not graded)" if s.stale else "")
        for s in report.scores
    ]
    references = {ex.grade_id: ex.reference for ex in report.exercises}
    for s in report.scores:
        lines += [f"SURVIVED {m.id}\n{survivor_diff(references[s.exercise], m)}" for m in s.survivors]
    for s in report.scores:
        if s.survivors or s.rate < ledger.TARGET:
            lines.append(
                f"FAIL {report.chapter}/{report.lab} {s.exercise}: {s.rate:.1%} killed, "
                f"{len(s.survivors)} non-equivalent survivors (target {ledger.TARGET:.0%}, none surviving)"
            )
        if s.stale:
            lines.append(
                f"FAIL {report.chapter}/{report.lab} {s.exercise}: {len(s.stale)} mutants without a current "
                "verdict"
            )
    lines += [f"FAIL {report.chapter}/{report.lab}: {p}" for p in report.problems]
    if report.graded:
        lines.append(f"{report.graded} runs in {report.seconds:.0f} s, {report.cpu_seconds:.0f} CPU-s")
    return lines
