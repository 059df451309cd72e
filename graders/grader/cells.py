"""Build the cells a sandbox runs from a submission, with graded cells restored from the source.

nbgrader's rule, made strict here: what the instructor wrote (test cells, locked and unmarked cells,
points, the order of the cells) comes from the source notebook; only the solution cells come from the
submission, after :mod:`graders.grader.vetting` has read them. Cells a student added never run. Hidden tests
never travel into the sandbox: their work is done by the lab's probes.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field

import nbformat

from graders.boundary.protocol import Cell
from graders.coursedir import nbgrader_meta, visible_part, without_solutions
from graders.grader.parsing import parsed, read_cell
from graders.grader.vetting import Finding, imported_names, vet


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
    altered: list[str] = field(
        default_factory=list
    )  # a copy of a graded or locked cell whose source or metadata was edited
    duplicated: list[str] = field(
        default_factory=list
    )  # graded, locked or solution cells that appear more than once
    added: list[int] = field(default_factory=list)  # indices of code cells of the submission that do not run
    refused: dict[str, list[Finding]] = field(default_factory=dict)  # solution grade_id -> why it did not run
    solutions: dict[str, str] = field(default_factory=dict)  # solution grade_id -> the source that runs


def test_cells(source_nb: nbformat.NotebookNode) -> list[TestCell]:
    """The graded test cells of the source, in notebook order."""
    return [
        _test_cell(c)
        for c in source_nb.cells
        if c.cell_type == "code" and nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution")
    ]


def _test_cell(cell: nbformat.NotebookNode) -> TestCell:
    meta = nbgrader_meta(cell)
    return TestCell(meta["grade_id"], float(meta.get("points", 0)), visible_part(cell.source), cell.source)


def exercise_tests(nb: nbformat.NotebookNode) -> dict[str, list[str]]:
    """Solution grade_id -> the graded test cells that follow it, up to the next solution cell."""
    groups: dict[str, list[str]] = {}
    current: str | None = None
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution") and cell.cell_type == "code":
            current = meta["grade_id"]
            groups[current] = []
        elif meta.get("grade") and cell.cell_type == "code" and current is not None:
            groups[current].append(meta["grade_id"])
    return groups


def _copies(submitted: nbformat.NotebookNode) -> dict[str, list[tuple[int, nbformat.NotebookNode]]]:
    """grade_id -> every code cell of the submission that claims it, with its index."""
    found: dict[str, list[tuple[int, nbformat.NotebookNode]]] = {}
    for index, cell in enumerate(submitted.cells):
        grade_id = nbgrader_meta(cell).get("grade_id")
        if cell.cell_type == "code" and isinstance(grade_id, str):
            found.setdefault(grade_id, []).append((index, cell))
    return found


def restore(
    source_nb: nbformat.NotebookNode, submitted: nbformat.NotebookNode, vetted: bool = True
) -> Restored:
    """The cells to run: the source's code cells in the source's order, each solution cell taken from the
    submission (its last copy), everything else from the source.

    Cells the student added never run (``added`` lists them for the instructor); every copy of a graded
    or locked cell is compared with the source. With ``vetted``, a solution cell that breaks the policy
    for graded code (:mod:`graders.grader.vetting`) is replaced by its blank release and recorded in ``refused``.
    """
    copies = _copies(submitted)
    modules = (
        imported_names(tuple(c.source for c in source_nb.cells if c.cell_type == "code")) if vetted else None
    )
    owners = exercise_names(source_nb) if vetted else {}
    result = Restored([])
    for index, cell in enumerate(source_nb.cells):
        if cell.cell_type == "code":
            result.cells.append(_restored_cell(index, cell, copies, modules, result, owners))
    result.added = _added(source_nb, submitted)
    return result


class _ModuleScope(ast.NodeVisitor):
    """Every name a cell binds in the notebook's namespace, with its first line: any statement's target at module
    level (nested in ``if``/``with``/``try``/``for`` too), ``with ... as``, ``except ... as``, ``case`` captures,
    ``:=`` (which binds there even inside a comprehension), imports, and a function's ``global`` names."""

    def __init__(self) -> None:
        self.found: dict[str, int] = {}

    def bind(self, name: str | None, node: ast.AST) -> None:
        if name:
            self.found.setdefault(name, getattr(node, "lineno", 1))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.bind(node.id, node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.bind(node.name, node)
        for inner in ast.walk(node):  # its body is its own scope, but for the names it declares global
            if isinstance(inner, ast.Global):
                for name in inner.names:
                    self.bind(name, inner)
        for expr in [*node.decorator_list, *node.args.defaults, *filter(None, node.args.kw_defaults)]:
            self.visit(expr)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bind(node.name, node)
        for inner in ast.walk(node):
            if isinstance(inner, ast.Global):
                for name in inner.names:
                    self.bind(name, inner)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for expr in [*node.args.defaults, *filter(None, node.args.kw_defaults)]:
            self.visit(expr)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.bind(node.target.id, node)
        self.visit(node.value)

    def visit_comprehension(self, node: ast.comprehension) -> None:  # its target is the comprehension's own
        self.visit(node.iter)
        for condition in node.ifs:
            self.visit(condition)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self.bind(node.name, node)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self.bind(node.name, node)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self.bind(node.name, node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.bind(node.rest, node)
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            self.bind((alias.asname or alias.name).split(".")[0], node)

    visit_ImportFrom = visit_Import


def top_level_names(source: str) -> dict[str, int]:
    """Names a cell binds in the notebook's namespace, however it binds them (:class:`_ModuleScope`), with
    their lines; {} when it is not read (the vetting says why). The vetting's tree, not a second parse."""
    tree = read_cell(source)
    if not isinstance(tree, ast.Module):
        return {}
    scope = _ModuleScope()
    try:
        scope.visit(tree)
    except RecursionError:
        return {"(a cell too deeply nested to read)": 1}
    return scope.found


def exercise_names(source_nb: nbformat.NotebookNode) -> dict[str, str]:
    """Each name a solution cell of the source defines with ``def`` or ``class`` -> that cell's grade_id: the
    exercise's functions, which no other solution cell may define (their stated rules are read in their own cell)."""
    owners: dict[str, str] = {}
    for cell in source_nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("solution") and isinstance(meta.get("grade_id"), str):
            tree = parsed(cell.source)
            for node in tree.body if tree else []:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    owners.setdefault(node.name, meta["grade_id"])
    return owners


def defines_another_exercise(source: str, grade_id: str, owners: dict[str, str]) -> list[Finding]:
    """Where a solution cell binds a name that is another exercise's function or class."""
    return [
        Finding(
            line,
            f"defines '{name}', the exercise of solution cell '{owners[name]}' (each exercise's code "
            "goes in its own cell)",
        )
        for name, line in top_level_names(source).items()
        if owners.get(name, grade_id) != grade_id
    ]


def _restored_cell(
    index: int,
    cell: nbformat.NotebookNode,
    copies: dict,
    modules: frozenset[str] | None,
    result: Restored,
    owners: dict[str, str] | None = None,
) -> Cell:
    """What runs for the source's code cell ``index``; notes what its copies in the submission did."""
    meta = nbgrader_meta(cell)
    grade_id = meta.get("grade_id")
    if not grade_id:
        return Cell(f"cell{index}", cell.source)
    found = copies.get(grade_id, [])
    if len(found) > 1:
        result.duplicated.append(grade_id)
    if meta.get("solution"):
        source = found[-1][1].source if found else without_solutions(cell.source)
        findings = vet(source, modules) if modules is not None else []
        findings = findings or defines_another_exercise(source, grade_id, owners or {})
        if findings:
            result.refused[grade_id] = findings
            source = without_solutions(cell.source)
        result.solutions[grade_id] = source
        return Cell(grade_id, source)
    if meta.get("grade"):
        test = _test_cell(cell)
        if not found:
            result.missing.append(grade_id)
        elif any(test.edited(c.source) or _points(c) != test.points for _, c in found):
            result.altered.append(grade_id)
        return Cell(grade_id, test.visible_source, graded=True)
    if any(_squeeze(c.source) != _squeeze(cell.source) for _, c in found):
        result.altered.append(grade_id)
    return Cell(grade_id, cell.source)


def _added(source_nb: nbformat.NotebookNode, submitted: nbformat.NotebookNode) -> list[int]:
    """Indices of the submission's code cells that are no cell of the source (unknown grade_id, or an
    unmarked cell whose source is not one of the source's unmarked cells)."""
    known_ids = {nbgrader_meta(c).get("grade_id") for c in source_nb.cells if c.cell_type == "code"} - {None}
    unmarked = {
        _squeeze(c.source)
        for c in source_nb.cells
        if c.cell_type == "code" and not nbgrader_meta(c).get("grade_id")
    }
    added = []
    for index, cell in enumerate(submitted.cells):
        grade_id = nbgrader_meta(cell).get("grade_id")
        if (
            cell.cell_type == "code"
            and grade_id not in known_ids
            and _squeeze(cell.source) not in unmarked | {""}
        ):
            added.append(index)
    return added


def reference_cells(source_nb: nbformat.NotebookNode) -> list[Cell]:
    """The source notebook's own code cells (solutions included), test cells without hidden parts."""
    return restore(source_nb, source_nb, vetted=False).cells


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
