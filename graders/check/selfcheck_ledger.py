"""What the last full self-check found, kept next to the probes so that `make test` knows it is still true.

``course/<chapter>/probes/<lab>.selfcheck.json``: one line per version `labs check` grades (the source, the
blank release, the source cut after each exercise, each wrong and each other right solution), with whether it
earned what it should have and the hash of what decided that: every cell of the version's notebook, the lab's
probe file, the files that decide verdicts (:func:`graders.check.mutants_ledger.verdict_files`), the self-check's
own (:func:`check_files`) and the project modules the probe file imports. `labs check --record` writes it; a version missing from it, one it lists that no
longer exists, or one whose hash moved is stale, and `make test` fails until `make selfcheck` grades the lab again.

No sandbox and no grading here: this module lists, hashes, reads and writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from graders.check.closure import closure
from graders.check.mutants_ledger import (
    GRADERS,
    grader_sources,
    hash_of,
    probe_helpers,
    verdict_files,
    verdict_sources,
)
from graders.check.selfcheck import ChapterCheck, SolutionFolders, Verdict, versions
from graders.coursedir import labs_in, probes_file, solution_files
from graders.grader.grading import Lab, load_lab

Hashes = dict[str, str]  # version name -> the hash its verdict is valid for
SELF_CHECK = GRADERS / "check" / "selfcheck.py"


@cache
def check_files() -> tuple[str, ...]:
    """Beyond the verdict files, what decides which versions there are, what each holds and what it must earn:
    the self-check and the project modules it imports (derived from the tree, never listed)."""
    verdict = set(verdict_files())
    return tuple(f for f in closure([SELF_CHECK]) if f not in verdict)


def results_file(lab: Path) -> Path:
    """Where a lab's self-check verdicts are committed: next to its probes."""
    return probes_file(lab).with_suffix(".selfcheck.json")


def version_hashes(lab: Lab, folders: SolutionFolders) -> Hashes:
    """Each version the self-check grades for ``lab``, and the hash of everything its verdict depends on.

    The release is hashed as the source it is generated from (nbgrader's release needs a scratch course)."""
    graders = verdict_sources() + probe_helpers(lab.probes_source) + grader_sources(check_files())
    right = solution_files(folders.right, lab.chapter) if folders.right else []
    found = versions(lab, lab.source, solution_files(folders.wrong, lab.chapter), right)
    return {
        v.name: hash_of(
            graders,
            lab.probes_source,
            v.name,
            v.expectation,
            ",".join(v.exercise),
            str(v.cut),
            *(cell.source for cell in v.nb.cells),
        )
        for v in found
    }


@dataclass(frozen=True)
class Entry:
    """One version's recorded verdict."""

    hash: str
    ok: bool
    note: str = ""


def read(lab: Path) -> dict[str, Entry]:
    """Version name -> its recorded verdict (empty when the lab has no results file)."""
    path = results_file(lab)
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        name: Entry(entry["hash"], bool(entry["ok"]), entry.get("note", ""))
        for name, entry in data.get("versions", {}).items()
    }


def stale(current: Hashes, recorded: dict[str, Entry]) -> list[str]:
    """Versions whose verdict is missing or was found for other sources, then recorded ones that no longer exist."""
    return [
        name for name, digest in current.items() if name not in recorded or recorded[name].hash != digest
    ] + [name for name in recorded if name not in current]


def dumps(lab: str, entries: dict[str, Entry]) -> str:
    """The results as JSON with one line per version (a rerun's diff shows each verdict that changed)."""
    lines = [
        f"  {json.dumps(name)}: {json.dumps(_plain(entry), sort_keys=True)}"
        for name, entry in entries.items()
    ]
    return f'{{"lab": {json.dumps(lab)}, "versions": {{\n' + ",\n".join(lines) + "}}\n"


def _plain(entry: Entry) -> dict:
    return {"hash": entry.hash, "ok": entry.ok, **({"note": entry.note} if entry.note else {})}


def record(lab_path: Path, lab: Lab, verdicts: list[Verdict], folders: SolutionFolders) -> Path:
    """Write the verdicts of one full check of ``lab`` (each version graded once, in grading order)."""
    current = version_hashes(lab, folders)
    graded = {v.version: v for v in verdicts}
    missing = sorted(set(current) - set(graded))
    if missing:
        raise ValueError(f"{lab_path}: the check graded no verdict for {', '.join(missing)}")
    entries = {
        name: Entry(digest, graded[name].ok, "" if graded[name].ok else graded[name].note)
        for name, digest in current.items()
    }
    path = results_file(lab_path)
    partial = path.with_suffix(".partial")
    partial.write_text(dumps(f"{lab.chapter}/{lab.name}", entries), encoding="utf-8")
    partial.replace(path)
    return path


def record_chapter(chapter_dir: Path, result: ChapterCheck, folders: SolutionFolders) -> list[Path]:
    """Record each lab of a checked chapter (none when the chapter could not be checked: nothing was graded)."""
    if result.error is not None:
        return []
    return [
        record(path, load_lab(path), [v for v in result.verdicts if v.lab == path.name], folders)
        for path in labs_in(chapter_dir)
    ]
