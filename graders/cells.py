"""Build the cells a sandbox runs from a submission, with graded cells restored from the source.

nbgrader's rule, kept here: what the instructor wrote (test cells, locked cells, points) comes from
the source notebook; only what the student may change (solution and free cells) comes from the
submission. Hidden tests never travel into the sandbox: their work is done by the lab's probes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import nbformat

from graders.coursedir import nbgrader_meta, visible_part, without_solutions
from graders.job import Cell


@dataclass(frozen=True)
class TestCell:
    """A graded test cell of the source notebook."""

    grade_id: str
    points: float
    visible_source: str
    full_source: str

    def edited(self, source: str) -> bool:
        """True when ``source`` is neither the released (visible) nor the full test, up to whitespace."""
        return _squeeze(source) not in (_squeeze(self.visible_source), _squeeze(self.full_source))


def _squeeze(source: str) -> str:
    return "".join(source.split())


@dataclass
class Restored:
    """The cells to run and what restoring them found wrong with the submission."""

    cells: list[Cell]
    missing: list[str] = field(default_factory=list)  # graded cells deleted or retyped
    altered: list[str] = field(default_factory=list)  # graded cells whose source or metadata was edited


def test_cells(source_nb: nbformat.NotebookNode) -> list[TestCell]:
    """The graded test cells of the source, in notebook order."""
    found = []
    for cell in source_nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            found.append(TestCell(meta["grade_id"], float(meta.get("points", 0)), visible_part(cell.source), cell.source))
    return found


def locked_sources(source_nb: nbformat.NotebookNode) -> dict[str, str]:
    """grade_id -> source of every locked or graded code cell the student may not change."""
    return {nbgrader_meta(c)["grade_id"]: c.source for c in source_nb.cells
            if c.cell_type == "code" and nbgrader_meta(c).get("grade_id")
            and (nbgrader_meta(c).get("locked") or nbgrader_meta(c).get("grade")) and not nbgrader_meta(c).get("solution")}


def restore(source_nb: nbformat.NotebookNode, submitted: nbformat.NotebookNode) -> Restored:
    """The submission's code cells in its order, test and locked cells taken from the source.

    A grade_id claimed by several cells counts at its last cell; the others run as the student's code.
    """
    tests = {t.grade_id: t for t in test_cells(source_nb)}
    locked = locked_sources(source_nb)
    result = Restored([])
    last = {nbgrader_meta(c).get("grade_id"): i for i, c in enumerate(submitted.cells) if c.cell_type == "code"}
    seen: set[str] = set()
    for index, cell in enumerate(submitted.cells):
        grade_id = nbgrader_meta(cell).get("grade_id")
        if cell.cell_type != "code" or not isinstance(grade_id, str) or last.get(grade_id) != index:
            if cell.cell_type == "code":
                result.cells.append(Cell(f"cell{index}", cell.source))
            continue
        if grade_id in tests:
            seen.add(grade_id)
            if tests[grade_id].edited(cell.source) or _points(cell) != tests[grade_id].points:
                result.altered.append(grade_id)
            result.cells.append(Cell(grade_id, tests[grade_id].visible_source, graded=True))
        elif grade_id in locked:
            seen.add(grade_id)
            result.cells.append(Cell(grade_id, locked[grade_id]))
        else:
            result.cells.append(Cell(f"cell{index}", cell.source))
    result.missing = [g for g in tests if g not in seen]
    return result


def reference_cells(source_nb: nbformat.NotebookNode) -> list[Cell]:
    """The source notebook's own code cells (solutions included), test cells without hidden parts."""
    return restore(source_nb, source_nb).cells


def _points(cell: nbformat.NotebookNode) -> float:
    try:
        return float(nbgrader_meta(cell).get("points", 0))
    except (TypeError, ValueError):
        return -1.0


def blank_version(source_nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The source with every solution replaced the way nbgrader's release does it (without nbgrader)."""
    nb = nbformat.from_dict(json.loads(json.dumps(source_nb)))
    for cell in nb.cells:
        if cell.cell_type == "code" and nbgrader_meta(cell).get("solution"):
            cell.source = without_solutions(cell.source)
    return nb
