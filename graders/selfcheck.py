"""`labs check`: a lab is sound when its source earns full marks, its release zero,
and each plausible wrong solution loses points. Graded through nbgrader (generate + autograde)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ci.runner import kernel_env
from graders import gradebook_course as course
from graders.mutants import grade_wrong_solutions

SOURCE_STUDENT = "selfcheck-source"
BLANK_STUDENT = "selfcheck-blank"


@dataclass
class Verdict:
    """The outcome of grading one version of a lab, and what it should have been."""

    lab: str
    version: str
    expectation: str
    cells: list[course.CellScore]
    ok: bool
    note: str = ""

    @property
    def score(self) -> float:
        return sum(c.score for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.cells)


@dataclass
class ChapterCheck:
    """All verdicts for one chapter; ``ok`` when every one holds."""

    chapter: str
    verdicts: list[Verdict] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.verdicts) and all(v.ok for v in self.verdicts)


def wrong_solutions(wrong_dir: Path, chapter: str) -> list[tuple[str, Path]]:
    """``(solution grade_id, file)`` for each ``<grade_id>__<slug>.py`` of the chapter."""
    folder = wrong_dir / chapter
    return [(p.stem.split("__")[0], p) for p in sorted(folder.glob("*__*.py"))] if folder.is_dir() else []


def with_solution_replaced(notebook: Path, grade_id: str, source: str) -> nbformat.NotebookNode:
    """The notebook with the solution cell ``grade_id`` replaced by ``source``."""
    nb = nbformat.read(notebook, as_version=4)
    cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    if not cells or not cells[0].metadata["nbgrader"].get("solution"):
        raise ValueError(f"{notebook}: no solution cell with grade_id {grade_id!r}")
    cells[0].source = source
    return nb


def check_chapter(chapter_dir: Path, build_root: Path, wrong_dir: Path, thorough: bool = False) -> ChapterCheck:
    """Self-check every lab of one chapter in a fresh nbgrader course under ``build_root``.

    Source and release are always graded by nbgrader; wrong solutions too when ``thorough``,
    otherwise in one kernel per lab (:mod:`graders.mutants`).
    """
    chapter = chapter_dir.name
    result = ChapterCheck(chapter)
    labs = sorted(chapter_dir.glob("lab_*.ipynb"))
    if not labs:
        result.error = f"{chapter_dir}: no lab_*.ipynb to check"
        return result
    root = build_root / chapter
    shutil.rmtree(root, ignore_errors=True)
    try:
        api = course.api(root)
        course.stage_source(root, chapter, labs)
        course.require_success(api.generate_assignment(chapter), f"generate_assignment {chapter}")
        wrong = wrong_solutions(wrong_dir, chapter)
        submissions = _submissions(root, chapter, labs, wrong if thorough else [])
        for student, (lab, version, expectation) in submissions.items():
            course.require_success(api.autograde(chapter, student), f"autograde {student}")
            cells = course.scores(api.coursedir.db_url, chapter, lab.stem, student)
            result.verdicts.append(_judge(lab.name, version, expectation, cells))
        if not thorough and wrong:
            result.verdicts += _fast_wrong_solutions(labs, wrong, root)
    except Exception as err:
        result.error = f"{chapter}: {err}"
    return result


def _fast_wrong_solutions(labs: list[Path], wrong: list[tuple[str, Path]], root: Path) -> list[Verdict]:
    verdicts = []
    env = kernel_env(root / "cache")
    for lab in labs:
        for name, cells in grade_wrong_solutions(lab, wrong, env, root / "mutants" / lab.stem).items():
            verdicts.append(_judge(lab.name, f"wrong solution {name} (its exercise)", "loses", cells))
    return verdicts


def _submissions(root: Path, chapter: str, labs: list[Path],
                 wrong: list[tuple[str, Path]]) -> dict[str, tuple[Path, str, str]]:
    """Write each version to grade as a submission; map student id -> (lab, version, expectation)."""
    plan: dict[str, tuple[Path, str, str]] = {}
    for lab in labs:
        suffix = "" if len(labs) == 1 else f"-{lab.stem}"
        release = root / "release" / chapter / lab.name
        _submit(root, SOURCE_STUDENT + suffix, chapter, lab.name, nbformat.read(lab, as_version=4))
        plan[SOURCE_STUDENT + suffix] = (lab, "source (with solutions)", "full")
        _submit(root, BLANK_STUDENT + suffix, chapter, lab.name, nbformat.read(release, as_version=4))
        plan[BLANK_STUDENT + suffix] = (lab, "release (blank)", "zero")
        for grade_id, path in wrong:
            try:
                nb = with_solution_replaced(lab, grade_id, path.read_text(encoding="utf-8"))
            except ValueError:
                continue
            student = f"selfcheck-wrong-{path.stem}{suffix}".replace("_", "-")
            _submit(root, student, chapter, lab.name, nb)
            plan[student] = (lab, f"wrong solution {path.name}", "loses")
    return plan


def _submit(root: Path, student: str, chapter: str, name: str, nb: nbformat.NotebookNode) -> None:
    folder = root / "submitted" / student / chapter
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)


def _judge(lab: str, version: str, expectation: str, cells: list[course.CellScore]) -> Verdict:
    verdict = Verdict(lab, version, expectation, cells, ok=False)
    if not cells:
        verdict.note = "no graded cells found"
    elif expectation == "full":
        short = [c.grade_id for c in cells if c.score < c.max_score]
        verdict.ok, verdict.note = not short, f"below full marks: {', '.join(short)}" if short else ""
    elif expectation == "zero":
        scoring = [c.grade_id for c in cells if c.score > 0]
        verdict.ok = not scoring
        verdict.note = f"passes on the blank release (a broken test): {', '.join(scoring)}" if scoring else ""
    else:
        verdict.ok = verdict.score < verdict.max_score
        verdict.note = "" if verdict.ok else "earned full marks: the tests do not catch this mistake"
    return verdict
