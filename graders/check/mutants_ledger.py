"""What mutation testing has found, kept next to the probes and reviewed like code.

``course/<chapter>/probes/<lab>.mutants.json``: each exercise's hash and, per mutant id, its verdict
(killed, survived, stillborn) and hash. An exercise's hash covers its solution cell, its test cells,
the probe file, the grader files that decide verdicts (:func:`verdict_files`) and the other grader
modules that probe file imports (:func:`probe_helpers`); a mutant's covers
that and its own text. A mutant whose recorded hash is not the current one is stale: ``labs check
--mutants`` grades it again, and nothing else.

``course/<chapter>/probes/<lab>.equivalent.toml``: ``"<mutant id>" = "why no probe can tell it from the
reference"``, one line each: survivors that are not failures.

No sandbox and no grading here: this module reads, writes and judges (:func:`score`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import nbformat
import tomllib

from graders.check.closure import PROJECT, closure
from graders.check.mutants import Mutant, mutants_of
from graders.coursedir import nbgrader_meta, probes_file
from graders.grader.cells import exercise_tests

TARGET = 0.95  # of the mutants that are not equivalent, at least this share killed (stillborn ones count)
VERDICTS = ("killed", "survived", "stillborn")
# The code that turns a run into a verdict is every module of the sandbox's side, the boundary and the trusted
# grader (compared values, scores, probes' draws and recorders, what may run, what may leave the sandbox and
# how), how a mutant's run is read, and every project module they import: a change to any makes every result
# stale.
GRADERS = PROJECT / "graders"
VERDICT_PACKAGES = ("inside", "boundary", "grader")
VERDICT_READER = "check/mutants_verdict.py"


@cache
def verdict_files() -> tuple[str, ...]:
    """The files that decide verdicts, relative to the project's root (derived from the tree, never listed)."""
    seeds = [path for package in VERDICT_PACKAGES for path in (GRADERS / package).rglob("*.py")]
    return closure([*seeds, GRADERS / VERDICT_READER])


def results_file(lab: Path) -> Path:
    """Where a lab's mutation results are committed: next to its probes."""
    return probes_file(lab).with_suffix(".mutants.json")


def equivalents_file(lab: Path) -> Path:
    """Where a lab's equivalent mutants are listed, each with its reason."""
    return probes_file(lab).with_suffix(".equivalent.toml")


def hash_of(*parts: str) -> str:
    """A short hash of the texts, in order (a part's end is marked, so no two splits of one text collide)."""
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.encode())
        sha.update(b"\0")
    return sha.hexdigest()[:16]


@dataclass(frozen=True)
class Exercise:
    """One exercise's reference solution cell, its mutants, and the hash its results are valid for."""

    grade_id: str
    reference: str
    tests: tuple[str, ...]
    hash: str
    mutants: tuple[Mutant, ...]

    def mutant_hash(self, mutant: Mutant) -> str:
        """What a verdict of ``mutant`` is valid for: the exercise's hash and the mutant's text."""
        return hash_of(self.hash, mutant.source)


def grader_sources(files: Iterable[str]) -> str:
    """Project files (paths from the project's root), each name then its text, as one text (for the hashes)."""
    return "".join(f"{name}\n{(PROJECT / name).read_text(encoding='utf-8')}" for name in files)


def verdict_sources() -> str:
    """The grader files that decide verdicts, as one text (for the hashes)."""
    return grader_sources(verdict_files())


def probe_helpers(probes: str) -> str:
    """The project modules a probe file runs beyond :func:`verdict_files`, as one text: they decide that lab's
    inputs, so their change makes only the labs that use them stale."""
    verdict = set(verdict_files())
    return grader_sources(f for f in closure(sources=[("probes", probes)]) if f not in verdict)


def exercises(lab: Path) -> list[Exercise]:
    """Each graded exercise of a lab with its mutants, in notebook order."""
    nb = nbformat.read(lab, as_version=4)
    probes = probes_file(lab).read_text(encoding="utf-8")
    graders = verdict_sources() + probe_helpers(probes)
    cells = {nbgrader_meta(c).get("grade_id"): c.source for c in nb.cells if c.cell_type == "code"}
    found = []
    for grade_id, tests in exercise_tests(nb).items():
        if tests:
            reference = cells[grade_id]
            digest = hash_of(reference, *(cells[t] for t in tests), probes, graders)
            found.append(
                Exercise(grade_id, reference, tuple(tests), digest, tuple(mutants_of(grade_id, reference)))
            )
    return found


def read_results(lab: Path) -> dict[str, dict]:
    """Mutant id -> ``{"verdict", "hash"}`` as committed (empty when there is no file)."""
    path = results_file(lab)
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        mid: entry
        for exercise in data.get("exercises", {}).values()
        for mid, entry in exercise["mutants"].items()
    }


def write_results(lab: Path, found: list[Exercise], results: dict[str, dict]) -> Path:
    """Commit-ready results of the current mutants (ids no longer made are dropped), sorted as made."""
    data = {
        "lab": f"{lab.parent.name}/{lab.stem}",
        "target": TARGET,
        "exercises": {
            ex.grade_id: {
                "hash": ex.hash,
                "mutants": {m.id: results[m.id] for m in ex.mutants if m.id in results},
            }
            for ex in found
        },
    }
    path = results_file(lab)
    partial = path.with_suffix(".partial")
    partial.write_text(dumps(data), encoding="utf-8")
    partial.replace(path)  # a run stopped while saving leaves the last whole file
    return path


def dumps(data: dict) -> str:
    """The results as JSON with one line per mutant (a rerun's diff shows each verdict that changed)."""
    exercises = [
        f'  {json.dumps(name)}: {{"hash": {json.dumps(ex["hash"])}, "mutants": {{\n'
        + ",\n".join(
            f"   {json.dumps(mid)}: {json.dumps(entry, sort_keys=True)}"
            for mid, entry in ex["mutants"].items()
        )
        + "}}"
        for name, ex in data["exercises"].items()
    ]
    return (
        f'{{"lab": {json.dumps(data["lab"])}, "target": {data["target"]}, "exercises": {{\n'
        + ",\n".join(exercises)
        + "}}\n"
    )


def read_equivalents(lab: Path) -> dict[str, str]:
    """Mutant id -> why it is equivalent (empty when there is no file); ValueError for an empty reason."""
    path = equivalents_file(lab)
    if not path.is_file():
        return {}
    listed = tomllib.loads(path.read_text(encoding="utf-8"))
    bad = [mid for mid, why in listed.items() if not isinstance(why, str) or not why.strip() or "\n" in why]
    if bad:
        raise ValueError(f"{path}: each entry needs a one-line reason: {', '.join(bad)}")
    return listed


def stale(found: list[Exercise], results: dict[str, dict]) -> list[tuple[Exercise, Mutant]]:
    """The mutants whose committed verdict is missing or was found for other sources."""
    return [
        (ex, m)
        for ex in found
        for m in ex.mutants
        if results.get(m.id, {}).get("hash") != ex.mutant_hash(m)
        or results[m.id].get("verdict") not in VERDICTS
    ]


@dataclass
class ExerciseScore:
    """One exercise's figures, and the mutants that keep it from the target."""

    exercise: str
    mutants: int = 0
    killed: int = 0
    stillborn: int = 0
    equivalent: int = 0
    survivors: list[Mutant] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Killed (stillborn included) among the mutants not listed as equivalent."""
        counted = self.mutants - self.equivalent - len(self.stale)
        return (self.killed + self.stillborn) / counted if counted else 1.0

    @property
    def ok(self) -> bool:
        """Current, no non-equivalent survivor, and at the target."""
        return not self.survivors and not self.stale and self.rate >= TARGET


def score(
    found: list[Exercise], results: dict[str, dict], equivalent: dict[str, str]
) -> tuple[list[ExerciseScore], list[str]]:
    """Per exercise its figures; and the problems of the equivalents list (an id no operator makes now,
    a listed mutant that was killed after all)."""
    scores, problems, made = [], [], set()
    out_of_date = {m.id for _, m in stale(found, results)}
    for ex in found:
        figures = ExerciseScore(ex.grade_id, len(ex.mutants))
        for mutant in ex.mutants:
            made.add(mutant.id)
            verdict = results.get(mutant.id, {}).get("verdict")
            if mutant.id in out_of_date:
                figures.stale.append(mutant.id)
            elif verdict == "survived" and mutant.id in equivalent:
                figures.equivalent += 1
            elif verdict == "survived":
                figures.survivors.append(mutant)
            else:
                figures.killed += verdict == "killed"
                figures.stillborn += verdict == "stillborn"
                if mutant.id in equivalent:
                    problems.append(
                        f"{mutant.id} is listed as equivalent but was {verdict}: remove it from the list"
                    )
        scores.append(figures)
    problems += [
        f"{mid} is listed as equivalent but no operator makes it now"
        for mid in sorted(set(equivalent) - made)
    ]
    return scores, problems
