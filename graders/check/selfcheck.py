"""`labs check`: a lab is sound when, graded the way `labs grade` grades (sandbox, probes, trusted
comparison), its source earns full marks, its nbgrader release zero, and each plausible wrong
solution loses points on its own exercise while each other correct solution earns them all; and it is big
enough to measure something (a ``Standard``: graded exercises, points, wrong solutions per exercise).

A wrong or right solution's run ends after its exercise's test cells (what follows cannot change what they
saw); the source cut after each exercise must still earn it, or a probe depends on later cells."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat

from graders.boundary.job_result import JobResult
from graders.boundary.protocol import Limits
from graders.check.cuts import code_after, may_cut
from graders.coursedir import LAB_PATTERN, labs_in, nbgrader_meta, solution_files
from graders.grader.cells import exercise_tests
from graders.grader.grading import Lab, Pool, focused, grade_one, load_lab, reference_runs, warm_modules
from graders.grader.results import CellGrade, ScoredCells
from graders.grader.submissions import Submission
from graders.nbgrader.course_root import CourseRoot
from graders.nbgrader.release import record_labs


@dataclass
class Verdict(ScoredCells):
    """The outcome of grading one version of a lab, and what it should have been."""

    lab: str
    version: str
    expectation: str
    cells: list[CellGrade]
    ok: bool
    note: str = ""
    warnings: list[str] = field(default_factory=list)  # worth a look, but the lab still passes


@dataclass(frozen=True)
class Standard:
    """What every lab of the course must have: graded exercises, points, wrong solutions per exercise."""

    exercises: int = 6
    points: float = 30
    wrong_per_exercise: int = 3


@dataclass
class ChapterCheck:
    """All verdicts for one chapter; ``ok`` when every one holds and no lab falls short of the standard."""

    chapter: str
    verdicts: list[Verdict] = field(default_factory=list)
    error: str | None = None
    shortfalls: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and bool(self.verdicts)
            and all(v.ok for v in self.verdicts)
            and not self.shortfalls
        )


@dataclass(frozen=True)
class SolutionFolders:
    """Where the replacement solutions live: wrong ones (must lose) and other right ones (must earn all)."""

    wrong: Path
    right: Path | None = None

    @classmethod
    def found(cls, wrong: Path, right: Path | None) -> SolutionFolders:
        """Both folders as absolute paths; no right-solution folder when it does not exist."""
        return cls(wrong.resolve(), right.resolve() if right is not None and right.is_dir() else None)


@dataclass(frozen=True)
class Version:
    """One notebook to grade in the self-check, and what it must earn."""

    name: str
    nb: nbformat.NotebookNode
    expectation: (
        str  # full | zero | loses | earns | cut (the source, run only up to one exercise: full marks on it)
    )
    exercise: tuple[
        str, ...
    ] = ()  # test cells run and judged (the replaced solution's exercise); all when empty
    cut: bool = True  # with an exercise: the run ends after its last test cell (graders.check.cuts)


def stray_solution_files(folder_root: Path, chapter: str, solution_ids: set[str]) -> list[str]:
    """Files of the chapter's (wrong- or right-) solution folder that no lab would use: silently ignored otherwise."""
    folder = folder_root / chapter
    unnamed = (
        [p for p in sorted(folder.glob("*.py")) if "__" not in p.stem and not p.name.startswith(".")]
        if folder.is_dir()
        else []
    )
    known = ", ".join(sorted(solution_ids)) or "none"
    return [f"{p}: not named <solution grade_id>__<slug>.py, so no exercise uses it" for p in unnamed] + [
        f"{p}: no solution cell has grade_id {grade_id!r} (known: {known})"
        for grade_id, p in solution_files(folder_root, chapter)
        if grade_id not in solution_ids
    ]


def shortfalls(lab: Lab, wrong: list[tuple[str, Path]], standard: Standard) -> list[str]:
    """How ``lab`` falls short of ``standard``, one line each (empty when it meets it)."""
    groups = {solution: tests for solution, tests in exercise_tests(lab.source).items() if tests}
    points = sum(t.points for t in lab.tests)
    found = []
    if len(groups) < standard.exercises:
        found.append(
            f"below the standard: {lab.name}: {len(groups)} graded exercises, "
            f"the standard is {standard.exercises}"
        )
    if points < standard.points:
        found.append(
            f"below the standard: {lab.name}: {points:g} points, the standard is {standard.points:g}"
        )
    for solution in groups:
        count = sum(grade_id == solution for grade_id, _ in wrong)
        if count < standard.wrong_per_exercise:
            found.append(
                f"below the standard: {lab.name}: exercise {solution} has {count} wrong solutions, "
                f"the standard is {standard.wrong_per_exercise}"
            )
    return found


def with_solution_replaced(source: nbformat.NotebookNode, grade_id: str, code: str) -> nbformat.NotebookNode:
    """A copy of ``source`` with the solution cell ``grade_id`` replaced by ``code``."""
    nb = nbformat.from_dict(json.loads(json.dumps(source)))
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade_id") == grade_id and nbgrader_meta(cell).get("solution"):
            cell.source = code
    return nb


def versions(
    lab: Lab,
    release: nbformat.NotebookNode,
    wrong: list[tuple[str, Path]],
    right: Sequence[tuple[str, Path]] = (),
) -> list[Version]:
    """Source, nbgrader's release, and each wrong (and other right) solution that belongs to this lab."""
    found = [
        Version("source (with solutions)", lab.source, "full"),
        Version("release (blank)", release, "zero"),
    ]
    groups = exercise_tests(lab.source)
    found += [
        Version(f"source cut after exercise {grade_id}", lab.source, "cut", tuple(tests))
        for grade_id, tests in groups.items()
        if tests and code_after(lab.source, tests[-1])
    ]
    for kind, expectation, files in (("wrong", "loses", wrong), ("right", "earns", right)):
        for grade_id, path in files:
            if grade_id in groups:
                code, tests = path.read_text(encoding="utf-8"), groups[grade_id]
                nb = with_solution_replaced(lab.source, grade_id, code)
                found.append(
                    Version(
                        f"{kind} solution {path.name} (its exercise)",
                        nb,
                        expectation,
                        tuple(tests),
                        cut=bool(tests) and may_cut(lab.source, tests[-1], code),
                    )
                )
    return found


SHORT_NOTES = {
    "earns": "a correct solution lost points (a probe too strict): ",
    "cut": "its probe depends on cells after the exercise (the wrong solutions' runs end there): ",
}


def judge(lab: str, version: Version, cells: list[CellGrade], error: str) -> Verdict:
    """Whether a version earned what it should have."""
    if version.expectation in ("loses", "earns", "cut"):
        cells = [c for c in cells if c.grade_id in version.exercise]
    verdict = Verdict(lab, version.name, version.expectation, cells, ok=False)
    if not cells:
        verdict.note = error or "no graded cells found"
    elif version.expectation in ("full", "earns", "cut"):
        short = [c for c in cells if c.score < c.points]
        verdict.ok = not short and not error
        strict = SHORT_NOTES.get(version.expectation, "")
        verdict.note = error or (
            f"{strict}below full marks: {', '.join(c.grade_id for c in short)} ({_why(short[0])})"
            if short
            else ""
        )
    elif version.expectation == "zero":
        scoring = [c.grade_id for c in cells if c.score > 0]
        verdict.ok = not scoring
        verdict.note = f"passes on the blank release (a broken test): {', '.join(scoring)}" if scoring else ""
        verdict.warnings = [
            f"{c.grade_id}: the visible test passes on the blank release" for c in cells if c.visible_ok
        ]
    else:
        verdict.ok = verdict.score < verdict.max_score
        verdict.note = "" if verdict.ok else "earned full marks: the tests do not catch this mistake"
    return verdict


def _why(cell: CellGrade) -> str:
    """Why a cell lost points, with the first differing case when there is one (instructor side)."""
    return f"{cell.why}: {cell.detail}" if cell.detail else cell.why


def release_of(chapter_dir: Path, labs: list[Path], build_root: Path) -> Path:
    """nbgrader's release of the chapter's labs, as `labs release` makes it, in a scratch course."""
    return record_labs(CourseRoot(build_root / chapter_dir.name), chapter_dir.name, labs)


def check_lab(
    pool: Pool, lab: Lab, path: Path, release: Path, folders: SolutionFolders, jobs: int, salts: int = 1
) -> list[Verdict]:
    """Grade every version of one lab under ``salts`` fresh salts (a reference run each); one verdict per
    version, which holds only when it held under every salt (else the first salt's under which it failed)."""
    todo = versions(
        lab,
        nbformat.read(release / path.name, as_version=4),
        solution_files(folders.wrong, lab.chapter),
        solution_files(folders.right, lab.chapter) if folders.right else [],
    )
    return held_under_every_salt([_check_under_salt(pool, lab, path, todo, jobs) for _ in range(salts)])


def held_under_every_salt(rounds: list[list[Verdict]]) -> list[Verdict]:
    """Each version's verdict over rounds of salts: the first round's, unless a later round failed it (then
    that round's, its note naming the salt)."""
    verdicts = rounds[0]
    for k, again in enumerate(rounds[1:], start=2):
        verdicts = [
            first
            if not first.ok or later.ok
            else replace(later, note=f"under salt {k} of {len(rounds)}: {later.note}")
            for first, later in zip(verdicts, again, strict=True)
        ]
    return verdicts


def _check_under_salt(pool: Pool, lab: Lab, path: Path, todo: list[Version], jobs: int) -> list[Verdict]:
    """Grade every version against a reference run of one fresh salt."""
    salt = secrets.randbits(62)
    reference = reference_runs(pool, {(lab.chapter, lab.name): lab}, salt)[(lab.chapter, lab.name)]

    def grade(version: Version) -> Verdict:
        graded_lab = focused(lab, version.exercise, version.cut) if version.exercise else lab
        graded = grade_one(
            pool,
            graded_lab,
            Submission("selfcheck", lab.chapter, lab.name, path, version.nb),
            reference,
            salt,
        )
        verdict = judge(path.name, version, graded.cells, graded.error)
        verdict.warnings += never_varied(reference) if version.expectation == "full" else []
        return verdict

    with ThreadPoolExecutor(jobs) as running:
        return list(running.map(grade, todo))


def never_varied(reference: JobResult) -> list[str]:
    """Parameters with a default that no call of a probe set to anything else (graders.inside.contracts records
    them on the reference run): a mistake in handling them would go unseen."""
    found = []
    for grade_id, record in sorted(reference.probes.items()):
        varied = record.contracts.varied if record.contracts else {}
        found += [
            f"{grade_id}: the probe never passes {call} anything but its default"
            for call, seen in varied.items()
            if "non-default" not in seen
        ]
    return found


def releases_of(chapter_dirs: list[Path], build_root: Path) -> dict[Path, Path | str]:
    """Each chapter's nbgrader release, or why it could not be made (one line)."""
    found: dict[Path, Path | str] = {}
    for folder in chapter_dirs:
        paths = labs_in(folder)
        try:
            found[folder] = (
                release_of(folder, paths, build_root) if paths else f"{folder}: no {LAB_PATTERN} to check"
            )
        except (RuntimeError, ValueError, OSError, SyntaxError) as err:
            found[folder] = f"{folder.name}: {err}"
    return found


def check_chapter(
    pool: Pool,
    chapter_dir: Path,
    release: Path | str,
    folders: SolutionFolders,
    jobs: int,
    standard: Standard,
    salts: int = 1,
) -> ChapterCheck:
    """Self-check every lab of one chapter (``release``: its nbgrader release, or why there is none)."""
    result = ChapterCheck(chapter_dir.name)
    if isinstance(release, str):
        result.error = release
        return result
    try:
        solution_ids: set[str] = set()
        for path in labs_in(chapter_dir):
            lab = load_lab(path)
            solution_ids |= set(exercise_tests(lab.source))
            result.shortfalls += shortfalls(lab, solution_files(folders.wrong, lab.chapter), standard)
            result.verdicts += check_lab(pool, lab, path, release, folders, jobs, salts)
        for folder in filter(None, (folders.wrong, folders.right)):
            result.shortfalls += stray_solution_files(folder, chapter_dir.name, solution_ids)
    except (RuntimeError, ValueError, OSError, SyntaxError) as err:
        result.error = f"{chapter_dir.name}: {err}"
    return result


def check_chapters(
    chapter_dirs: list[Path],
    build_root: Path,
    folders: SolutionFolders,
    jobs: int,
    standard: Standard = Standard(),
    sandbox: bool = True,
    salts: int = 1,
) -> list[ChapterCheck]:
    """Self-check the chapters with ``jobs`` sandboxes shared by all of them.

    ``folders.right``: ``<chapter>/<grade_id>__<slug>.py`` correct solutions other than the source's, each
    of which must earn its exercise's full points (a probe that rejects them is too strict).
    ``sandbox=False`` grades without bubblewrap (jobs keep their own uid, namespaces and limits where
    the kernel allows): a quick try while writing probes, or where bwrap is not installed.
    ``salts``: grade every version under that many fresh salts; a verdict holds only under all of them.
    """
    labs = [lab for folder in chapter_dirs for p in labs_in(folder) if (lab := _loadable(p))]
    pool = Pool(jobs, Limits(), 1, sandbox, build_root / "logs", warm_modules(labs))
    try:
        releases = releases_of(chapter_dirs, build_root)  # nbgrader works while the sandboxes warm up
        pool.ready()
        return [
            check_chapter(pool, folder, releases[folder], folders, jobs, standard, salts)
            for folder in chapter_dirs
        ]
    finally:
        pool.close()


def _loadable(path: Path) -> Lab | None:
    """The lab, or None when it cannot be loaded (its chapter's check then says why, in one line)."""
    try:
        return load_lab(path)
    except (ValueError, OSError):
        return None
