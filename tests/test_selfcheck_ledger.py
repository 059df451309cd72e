"""The self-check's committed verdicts (graders.check.selfcheck_ledger): current for every lab, every one held, and
stale the moment anything a verdict depends on changes. `make selfcheck` (in .ci/run) grades them again."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from graders import paths
from graders.check import selfcheck_ledger as ledger
from graders.check.selfcheck import SolutionFolders, Standard, Verdict, shortfalls, stray_solution_files
from graders.coursedir import labs_in, solution_files
from graders.grader.cells import exercise_tests
from graders.grader.grading import load_lab

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = SolutionFolders.found(ROOT / paths.WRONG_SOLUTIONS, ROOT / paths.RIGHT_SOLUTIONS)
LABS = sorted((ROOT / paths.COURSE).glob("*/lab_*.ipynb"))


@pytest.mark.parametrize("lab_path", LABS, ids=lambda p: p.parent.name)
def test_committed_verdicts_are_current_and_every_one_held(lab_path: Path) -> None:
    """A lab, probe, grader or solution-file change since the last `make selfcheck` fails here, naming it."""
    current = ledger.version_hashes(load_lab(lab_path), FOLDERS)
    recorded = ledger.read(lab_path)
    out_of_date = ledger.stale(current, recorded)
    assert recorded, f"no {ledger.results_file(lab_path)}: run make selfcheck"
    assert not out_of_date, (
        f"{len(out_of_date)} stale self-check verdicts in {ledger.results_file(lab_path)} "
        f"(first: {out_of_date[0]}): run make selfcheck"
    )
    failed = [f"{name}: {entry.note}" for name, entry in recorded.items() if not entry.ok]
    assert not failed, f"the self-check failed for {len(failed)} version(s), first: {failed[0]}"
    text = ledger.results_file(lab_path).read_text(encoding="utf-8")
    assert ledger.dumps(json.loads(text)["lab"], recorded) == text, (
        "not as graders.check.selfcheck_ledger writes it"
    )


@pytest.mark.parametrize("chapter", sorted({p.parent for p in LABS}), ids=lambda p: p.name)
def test_every_lab_meets_the_standard_and_every_solution_file_is_used(chapter: Path) -> None:
    """What `labs check` says of a chapter without grading anything, here without `make selfcheck`."""
    found, ids = [], set()
    for lab_path in labs_in(chapter):
        lab = load_lab(lab_path)
        ids |= set(exercise_tests(lab.source))
        found += shortfalls(lab, solution_files(FOLDERS.wrong, lab.chapter), Standard())
    for folder in (FOLDERS.wrong, FOLDERS.right):
        assert folder is not None
        found += stray_solution_files(folder, chapter.name, ids)
    assert not found, "\n".join(found)


def _copied_solutions(tmp_path: Path) -> SolutionFolders:
    for name in ("wrong", "right"):
        shutil.copytree(getattr(FOLDERS, name), tmp_path / name)
    return SolutionFolders.found(tmp_path / "wrong", tmp_path / "right")


def test_a_changed_solution_file_stales_its_version_and_no_other(tmp_path: Path) -> None:
    lab = load_lab(LABS[0])
    folders = _copied_solutions(tmp_path)
    before = ledger.version_hashes(lab, folders)
    _, changed = solution_files(folders.wrong, lab.chapter)[0]
    changed.write_text(changed.read_text(encoding="utf-8") + "\n# one more line\n", encoding="utf-8")
    _, removed = solution_files(folders.right, lab.chapter)[0]
    removed.unlink()
    after = ledger.version_hashes(lab, folders)
    recorded = {name: ledger.Entry(digest, True) for name, digest in before.items()}
    assert ledger.stale(after, recorded) == [
        f"wrong solution {changed.name} (its exercise)",
        f"right solution {removed.name} (its exercise)",
    ]


def test_a_changed_probe_or_grader_stales_every_version(monkeypatch: pytest.MonkeyPatch) -> None:
    lab = load_lab(LABS[0])
    before = ledger.version_hashes(lab, FOLDERS)
    edited = replace(lab, probes_source=lab.probes_source + "\n# edited\n")
    assert set(
        ledger.stale(
            ledger.version_hashes(edited, FOLDERS), {n: ledger.Entry(h, True) for n, h in before.items()}
        )
    ) == set(before)
    monkeypatch.setattr(ledger, "verdict_sources", lambda: "another grader")
    assert set(ledger.version_hashes(lab, FOLDERS).values()).isdisjoint(before.values())


def _verdict(lab: str, version: str, ok: bool) -> Verdict:
    return Verdict(
        lab, version, "loses", [], ok, "" if ok else "earned full marks: the tests do not catch this mistake"
    )


def test_record_writes_every_version_once_and_refuses_a_partial_check(tmp_path: Path) -> None:
    source = LABS[0]
    lab_path = tmp_path / source.parent.name / source.name
    shutil.copytree(source.parent / "probes", lab_path.parent / "probes")
    shutil.copy(source, lab_path)
    lab = load_lab(lab_path)
    names = list(ledger.version_hashes(lab, FOLDERS))
    with pytest.raises(ValueError, match="graded no verdict for"):
        ledger.record(lab_path, lab, [_verdict(lab_path.name, n, True) for n in names[1:]], FOLDERS)
    verdicts = [_verdict(lab_path.name, n, n != names[-1]) for n in names]
    written = ledger.record(lab_path, lab, verdicts, FOLDERS)
    recorded = ledger.read(lab_path)
    assert written == ledger.results_file(lab_path) and list(recorded) == names
    assert [n for n, e in recorded.items() if not e.ok] == [names[-1]] and recorded[names[-1]].note
    assert not ledger.stale(ledger.version_hashes(lab, FOLDERS), recorded)
