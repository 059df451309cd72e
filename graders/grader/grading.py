"""Grade a batch: a reference run per lab, then every submission in a sandbox, in parallel; points
are decided here, in the trusted grader, from the observations each run sent back."""

from __future__ import annotations

import functools
import secrets
import traceback
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat

from graders.boundary.job_result import CellRun, JobOutcome, JobResult, ProbeRecord
from graders.boundary.protocol import Cell, Job, Limits, Status
from graders.coursedir import probes_file
from graders.grader.cells import Restored, TestCell, exercise_tests, reference_cells, restore, test_cells
from graders.grader.compare import compare, points_for
from graders.grader.results import Batch, CellGrade, NotebookGrade
from graders.grader.sandbox.pool import Pool, Sandboxes, modules_imported_by, start_sandboxes
from graders.grader.submissions import Submission, matches_lab
from graders.grader.vetting import Finding, stated_rule_breaks
from graders.inside.probing import Probe, load_probes


@dataclass
class Lab:
    """A lab as the trusted grader knows it: source, test cells and probes."""

    chapter: str
    name: str
    source: nbformat.NotebookNode
    probes_source: str
    probes_file: str
    probes: dict[str, Probe]
    tests: list[TestCell]
    exclusive: bool = False  # it starts processes of its own (ranks): it gets the machine to itself
    focus: tuple[str, ...] = ()  # only these test cells run and are scored (a self-check of one exercise)
    cut: bool = True  # with a focus: nothing after its last test cell runs either (graders.check.cuts)
    vetted: bool = True  # solution cells are vetted before they run (False: the sandbox is the only layer)

    @functools.cached_property
    def exercise_of(self) -> dict[str, str]:
        """Test cell grade_id -> the solution cell it tests (the one before it)."""
        return {test: solution for solution, tests in exercise_tests(self.source).items() for test in tests}


def load_lab(path: Path) -> Lab:
    """Read a lab and its probe file; every graded test cell must have a probe."""
    source = nbformat.read(path, as_version=4)
    probes_path = probes_file(path)
    if not probes_path.is_file():
        raise ValueError(f"{path}: no probe file {probes_path}")
    probes_source = probes_path.read_text(encoding="utf-8")
    probes = import_probes(probes_source, probes_path)
    tests = test_cells(source)
    missing = [t.grade_id for t in tests if t.grade_id not in probes]
    if missing:
        raise ValueError(f"{probes_path}: no probe for {', '.join(missing)}")
    lab = Lab(path.parent.name, path.stem, source, probes_source, probes_path.name, probes, tests)
    lab.exclusive = any(m.startswith("labutils.launch") for m in warm_modules([lab]))
    return lab


def import_probes(source: str, path: Path) -> dict[str, Probe]:
    """A probe file's probes; one ``ValueError`` naming the file and line when it does not import."""
    try:
        return load_probes(source, str(path))
    except SyntaxError as err:
        raise ValueError(
            f"{path}:{err.lineno}: the probe file does not import: SyntaxError: {err.msg}"
        ) from err
    except Exception as err:  # whatever the instructor's module raises is re-raised, naming the file and line
        line = next(
            (f.lineno for f in reversed(traceback.extract_tb(err.__traceback__)) if f.filename == str(path)),
            None,
        )
        raise ValueError(
            f"{path}:{line}: the probe file does not import: {type(err).__name__}: {err}"
        ) from err


def warm_modules(labs: Iterable[Lab]) -> tuple[str, ...]:
    """Modules the labs and their probes import: the sandboxes import them once, before any job."""
    return modules_imported_by(lab_sources(labs))


def lab_sources(labs: Iterable[Lab]) -> list[str]:
    """The code of the labs' cells and of their probe files."""
    labs = list(labs)
    return [c.source for lab in labs for c in lab.source.cells if c.cell_type == "code"] + [
        lab.probes_source for lab in labs
    ]


def focused(lab: Lab, grade_ids: Iterable[str], cut: bool = True) -> Lab:
    """``lab`` narrowed to the test cells ``grade_ids``: the others neither run nor score (``cut``: nor
    does anything after the last of them)."""
    keep = tuple(grade_ids)
    return replace(
        lab,
        tests=[t for t in lab.tests if t.grade_id in keep],
        probes={g: p for g, p in lab.probes.items() if g in keep},
        focus=keep,
        cut=cut,
    )


def in_focus(lab: Lab, cells: list[Cell]) -> list[Cell]:
    """``cells`` without the test cells outside ``lab.focus``, and nothing after its last test cell
    (all of them when it has no focus): what follows an exercise cannot change what its tests saw.
    That its probe sees nothing later either is checked on the source (:mod:`graders.check.selfcheck`)."""
    if not lab.focus:
        return cells
    kept = [c for c in cells if not (c.graded and c.key not in lab.focus)]
    if lab.cut:
        kept = kept[: max((i + 1 for i, c in enumerate(kept) if c.graded), default=len(kept))]
    return kept


def job_for(lab: Lab, cells: Restored | list, salt: int, traceback: bool = False) -> Job:
    """The sandbox job of a notebook's cells, with the lab's probes (``traceback``: the instructor's source only)."""
    cells = in_focus(lab, cells.cells if isinstance(cells, Restored) else cells)
    return Job(
        cells, lab.probes_source, lab.probes_file, salt, traceback=traceback, probes_only=list(lab.focus)
    )


DID_NOT_RUN = CellRun(False, "did not run")
NOT_RUN = ProbeRecord(error="not run")


def score(lab: Lab, restored: Restored, outcome: JobOutcome, reference: JobResult) -> list[CellGrade]:
    """Points per test cell: its solution ran and kept the exercise's stated rules, the visible tests passed
    in the sandbox, and the probe matched the reference."""
    grades = []
    exercise_of = lab.exercise_of
    for test in lab.tests:
        unrun = _not_run(lab, restored, outcome, test, exercise_of.get(test.grade_id))
        if unrun:
            grades.append(CellGrade(test.grade_id, test.points, 0.0, unrun))
            continue
        assert outcome.result is not None, "_not_run says why a run without a result earns nothing"
        ran = outcome.result.cells.get(test.grade_id, DID_NOT_RUN)
        probe = lab.probes[test.grade_id]
        verdict = compare(
            outcome.result.probes.get(test.grade_id, NOT_RUN),
            reference.probes[test.grade_id],
            probe.rtol,
            probe.atol,
        )
        why = []
        if not ran.ok:
            why.append(f"visible tests failed: {ran.error}")
        if not verdict.ok:
            why.append(f"hidden check '{probe.description}' failed")
        earned = points_for(verdict, test.points, probe.partial_step) if ran.ok else 0.0
        detail = "; ".join(
            filter(None, [verdict.why, verdict.detail and f"first difference: {verdict.detail}"])
        )
        grades.append(CellGrade(test.grade_id, test.points, earned, "; ".join(why), detail, ran.ok))
    return grades


def _not_run(lab: Lab, restored: Restored, outcome: JobOutcome, test: TestCell, solution: str | None) -> str:
    """Why ``test`` earns nothing before its probe is looked at (empty when it is graded)."""
    if outcome.result is None:
        return Status(outcome.status).why
    if test.grade_id in restored.missing:
        return "test cell deleted or retyped"
    if solution in restored.refused:
        return f"solution cell '{solution}' did not run: {_lines(restored.refused[solution])} (not allowed in graded code)"
    probe = lab.probes[test.grade_id]
    broken = (
        stated_rule_breaks(restored.solutions, solution, probe.forbid, probe.iterative)
        if solution and (probe.forbid or probe.iterative)
        else []
    )
    return f"solution cell '{solution}' breaks the exercise's rule: {_lines(broken)}" if broken else ""


def _lines(findings: list[Finding], shown: int = 3) -> str:
    more = f" (and {len(findings) - shown} more)" if len(findings) > shown else ""
    return "; ".join(map(str, findings[:shown])) + more


def salt_of(salts: int | Mapping[str, int], chapter: str) -> int:
    """A chapter's salt: the run's one salt, or the chapter's from the class's (graders.grader.salts)."""
    return salts if isinstance(salts, int) else salts[chapter]


def reference_runs(
    pool: Pool, labs: dict[tuple[str, str], Lab], salt: int | Mapping[str, int]
) -> dict[tuple[str, str], JobResult]:
    """Each lab's source run once in the sandbox, with its chapter's salt: the observations submissions must match."""

    def one(lab: Lab) -> JobResult:
        outcome = pool.run(
            job_for(lab, reference_cells(lab.source), salt_of(salt, lab.chapter), traceback=True),
            lab.exclusive,
        )
        probes = outcome.result.probes if outcome.result else {}
        broken = {g: r.error for g, r in probes.items() if r.error is not None}
        if broken:
            raise RuntimeError(
                f"reference run of {lab.chapter}/{lab.name} failed: "
                + "\n".join(broken_probe(lab, g, error) for g, error in broken.items())
            )
        if outcome.result is None:
            raise RuntimeError(
                f"reference run of {lab.chapter}/{lab.name} failed ({outcome.status}): "
                f"{outcome.output_tail.strip().splitlines()[-1:] or ''}"
            )
        return outcome.result

    with ThreadPoolExecutor(len(pool.workers)) as running:
        return dict(zip(labs, running.map(one, labs.values()), strict=True))


def broken_probe(lab: Lab, grade_id: str, error: str) -> str:
    """A probe that raised on the instructor's source: its exception and last frames, for the instructor."""
    message, _, frames = error.partition("\n")
    shown = "".join(f"\n    {line}" for line in frames.splitlines())
    return f"probe {grade_id} ({lab.probes_file}) raised {message}{shown}"


def grade_one(
    pool: Pool, lab: Lab | None, sub: Submission, reference: JobResult | None, salt: int
) -> NotebookGrade:
    """Grade one submission; every problem ends up in the grade, none escapes."""
    try:
        return _grade_one(pool, lab, sub, reference, salt)
    except Exception as err:  # noqa: BLE001 - one submission never stops the batch
        grade = NotebookGrade(
            sub.student,
            sub.chapter,
            sub.notebook,
            "grader error",
            f"{sub.path}: grader error: {type(err).__name__}",
        )
        grade.cells = (
            [CellGrade(t.grade_id, t.points, 0.0, "not graded: grader error") for t in lab.tests]
            if lab
            else []
        )
        return grade


def _grade_one(
    pool: Pool, lab: Lab | None, sub: Submission, reference: JobResult | None, salt: int
) -> NotebookGrade:
    grade = NotebookGrade(sub.student, sub.chapter, sub.notebook, "error", sub.error)
    if lab is None or reference is None:
        grade.error = grade.error or f"{sub.path}: no such lab"
        return grade
    if sub.nb is None or not matches_lab(sub.nb, {t.grade_id for t in lab.tests}):
        grade.error = grade.error or f"{sub.path}: not {lab.chapter}/{lab.name} (none of its graded cells)"
        grade.cells = [CellGrade(t.grade_id, t.points, 0.0, "not graded: " + grade.error) for t in lab.tests]
        return grade
    restored = restore(lab.source, sub.nb, vetted=lab.vetted)
    try:
        outcome = pool.run(job_for(lab, restored, salt), lab.exclusive)
    except Exception as err:  # noqa: BLE001 - one submission never stops the batch
        outcome = JobOutcome(Status.GRADER_ERROR, output_tail=f"{type(err).__name__}")
    if outcome.result is not None and not complete(outcome.result, lab, restored):
        outcome.status, outcome.result = Status.BAD_RESULT, None
    grade.status = str(outcome.status) if outcome.status != Status.OK else "graded"
    grade.error = "" if outcome.status == Status.OK else Status(outcome.status).why
    if outcome.status == Status.GRADER_ERROR:
        grade.error += f" ({outcome.output_tail})"
    grade.seconds, grade.cpu_seconds = outcome.seconds, outcome.cpu_seconds
    grade.cells = score(lab, restored, outcome, reference)
    grade.flags = [f"test cell {g} deleted or retyped" for g in restored.missing]
    grade.flags += [f"cell {g} edited (the source's version runs)" for g in restored.altered]
    grade.flags += [
        f"cell {g} appears more than once (each copy compared; the source's runs)"
        for g in restored.duplicated
    ]
    grade.flags += [f"solution cell {g} not run: {_lines(f)}" for g, f in restored.refused.items()]
    if restored.added:
        grade.flags.append(
            f"{len(restored.added)} cells added by the student, not run: "
            + ", ".join(f"cell {i}" for i in restored.added[:10])
        )
    return grade


def complete(result: JobResult, lab: Lab, restored: Restored) -> bool:
    """A genuine result has an observation for every probe and a record of every test cell that ran."""
    ran = {c.key for c in in_focus(lab, restored.cells) if c.graded}
    return set(result.probes) == set(lab.probes) and ran <= set(result.cells)


def grade_batch(
    labs: dict[tuple[str, str], Lab],
    subs: list[Submission],
    jobs: int,
    limits: Limits,
    use_bwrap: bool,
    log_dir: Path,
    on_done: Callable[[NotebookGrade], None] = lambda g: None,
    prepare: Callable[[], None] = lambda: None,
    started: Sandboxes | None = None,
    salts: Mapping[str, int] | None = None,
) -> Batch:
    """Grade ``subs`` against ``labs`` with ``jobs`` sandboxes in parallel (``started``: sandboxes already
    spawned for them, closed here as if started here). ``salts``: each chapter's salt (the class's, kept by
    graders.grader.salts); without them every chapter draws from one salt made for this run.

    The references run in sandboxes of their own, shut down before the first student job starts:
    no process a submission runs in was ever near the instructor's source or its results.
    """
    salt = dict(salts) if salts is not None else dict.fromkeys({c for c, _ in labs}, secrets.randbits(62))
    sandboxes = started or start_sandboxes(
        warm_modules(labs.values()), len(labs), len(subs), jobs, limits, use_bwrap, log_dir
    )
    pool = sandboxes.students
    try:
        try:
            prepare()  # while the sandboxes warm up
            references = reference_runs(sandboxes.reference.ready(), labs, salt)
        finally:
            sandboxes.reference.close()
        pool.ready()
        isolation = [*pool.run(Job([])).isolation, pool.workers[0].limit_note]

        def one(sub: Submission) -> NotebookGrade:
            key = (sub.chapter, sub.notebook)
            grade = grade_one(pool, labs.get(key), sub, references.get(key), salt.get(sub.chapter, 0))
            on_done(grade)
            return grade

        with ThreadPoolExecutor(jobs) as running:
            grades = list(running.map(one, subs))
    finally:
        sandboxes.close()
    return Batch(grades, isolation, salt)
