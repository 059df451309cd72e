"""`labs lint`: the notebook conventions of docs/authoring.md, as ``file:cell: message`` problems
(more rules, one function each, in :mod:`labs.lint_rules`)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from graders.coursedir import (
    HIDDEN_BEGIN,
    SOLUTION_BEGIN,
    SOLUTION_END,
    SOLUTION_REGION,
    chapter_of,
    is_lab,
    nbgrader_meta,
    probes_file,
)
from labs import copies, lint_rules
from labs.lint_clauses import clauses_have_cases
from labs.lint_rules import Problem, assigned_names
from labs.lint_stated_rules import stated_rules_enforced
from labs.notebooks import PARAMETERS, BadInput, read
from labs.run import skips

SOLUTION_MARKERS = (SOLUTION_BEGIN, SOLUTION_END)
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
EXERCISE_TAG, SELF_CHECK_TAG = "exercise", "self-check"
MIN_EXERCISES = 3


def lint(paths: list[Path], learner_rules: bool = True) -> list[Problem]:
    """All problems in the given notebooks, including grade_id clashes within a chapter, "one sitting" and
    "taught before" among them (docs/authoring.md; ``learner_rules=False`` leaves those two out)."""
    problems: list[Problem] = []
    grade_ids: dict[str, dict[str, tuple[Path, int]]] = defaultdict(dict)
    for path in paths:
        try:
            nb = read(path)
        except BadInput as err:
            problems.append(Problem(path, None, str(err).removeprefix(f"{path}: ")))
            continue
        problems += lint_notebook(path, nb)
        problems += _learner_rules(path, nb) if learner_rules else []
        problems += _duplicate_grade_ids(path, nb, grade_ids[str(path.parent)])
    return problems


def lint_notebook(path: Path, nb: NotebookNode) -> list[Problem]:
    """The per-notebook checks: parameters cell, stripped outputs, nbgrader metadata, lab tests."""
    problems = (
        _parameters_cell(path, nb) + _stripped(path, nb) + _nbgrader_cells(path, nb) + _silent_skips(path, nb)
    )
    if nb.metadata.get("kernelspec", {}).get("name") != "python3":
        problems.append(Problem(path, None, "kernelspec must be python3 (run `labs lint --fix`)"))
    problems += lint_rules.apply(lint_rules.NOTEBOOK_RULES, path, nb)
    if is_lab(path):
        problems += _lab_has_probes(path, nb) + _copied_solutions(path, nb)
        problems += lint_rules.apply(lint_rules.LAB_RULES, path, nb) + stated_rules_enforced(path, nb)
        problems += clauses_have_cases(path, nb)
    else:
        problems += _lesson_exercises(path, nb) + lint_rules.apply(lint_rules.LESSON_RULES, path, nb)
    return problems


def _learner_rules(path: Path, nb: NotebookNode) -> list[Problem]:
    """One sitting per lesson; every torch name of a lab's reference solutions taught in a lesson before it."""
    if not is_lab(path):
        return lint_rules.apply(lint_rules.LEARNER_LESSON_RULES, path, nb)
    from labs.lint_taught import taught_before  # imports torch

    try:
        return taught_before(path, nb)
    except BadInput as err:  # docs/authoring.md without its list of basics
        return [Problem(path, None, str(err))]


def _parameters_cell(path: Path, nb: NotebookNode) -> list[Problem]:
    if not nb.cells or nb.cells[0].cell_type != "code":
        return [Problem(path, 0, "first cell must be a code cell tagged 'parameters'")]
    cell = nb.cells[0]
    problems = []
    if "parameters" not in cell.metadata.get("tags", []):
        problems.append(Problem(path, 0, "first cell must be tagged 'parameters' (papermill)"))
    missing = [name for name in PARAMETERS if name not in assigned_names(cell.source)]
    if missing:
        problems.append(Problem(path, 0, f"parameters cell must define {' and '.join(missing)}"))
    return problems


def _stripped(path: Path, nb: NotebookNode) -> list[Problem]:
    return [
        Problem(path, i, "outputs or execution count not stripped (run `labs lint --fix`)")
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]


def _nbgrader_cells(path: Path, nb: NotebookNode) -> list[Problem]:
    problems = []
    for i, cell in enumerate(nb.cells):
        meta = nbgrader_meta(cell)
        if not meta.get("solution") and any(m in cell.source for m in SOLUTION_MARKERS):
            problems.append(
                Problem(
                    path,
                    i,
                    "solution markers outside a solution cell (nbgrader refuses to generate the release)",
                )
            )
        if not meta:
            continue
        if not meta.get("grade_id"):
            problems.append(Problem(path, i, "nbgrader cell without a grade_id"))
        if meta.get("grade") and not (isinstance(meta.get("points"), int | float) and meta["points"] > 0):
            problems.append(Problem(path, i, f"graded cell {meta.get('grade_id')!r} must have points > 0"))
        if meta.get("solution") and cell.cell_type == "code":
            absent = [m for m in SOLUTION_MARKERS if m not in cell.source]
            if absent:
                problems.append(
                    Problem(path, i, f"solution cell {meta.get('grade_id')!r} lacks {absent[0]!r}")
                )
    return problems


def _duplicate_grade_ids(path: Path, nb: NotebookNode, seen: dict[str, tuple[Path, int]]) -> list[Problem]:
    problems = []
    for i, cell in enumerate(nb.cells):
        grade_id = nbgrader_meta(cell).get("grade_id")
        if not grade_id:
            continue
        if grade_id in seen:
            first_path, first_cell = seen[grade_id]
            problems.append(
                Problem(
                    path,
                    i,
                    f"duplicate grade_id {grade_id!r} in chapter "
                    f"{chapter_of(path)} (first at {first_path}:{first_cell})",
                )
            )
        else:
            seen[grade_id] = (path, i)
    return problems


def _lab_has_probes(path: Path, nb: NotebookNode) -> list[Problem]:
    """labs grade scores a graded cell only through its probe: each needs one in probes/<lab>.py."""
    probes = probes_file(path)
    if not probes.is_file():
        return [Problem(path, None, f"no probe file {probes} (labs grade needs a probe per graded cell)")]
    try:
        tree = ast.parse(probes.read_text(encoding="utf-8"))
    except SyntaxError as err:
        return [Problem(probes, None, f"line {err.lineno}: {err.msg}")]
    probed = {
        d.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        for d in node.decorator_list
        if isinstance(d, ast.Call)
        and getattr(d.func, "id", "") == "probe"
        and d.args
        and isinstance(d.args[0], ast.Constant)
    }
    return [
        Problem(path, i, f"graded cell {nbgrader_meta(c).get('grade_id')} has no probe in {probes}")
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        and nbgrader_meta(c).get("grade")
        and nbgrader_meta(c).get("grade_id") not in probed
    ]


def _silent_skips(path: Path, nb: NotebookNode) -> list[Problem]:
    """An experiment behind ``if <on CUDA>:`` runs nothing on CPU and says nothing: use cuda_only."""
    return [
        Problem(
            path,
            i,
            f"line {line}: `if` on CUDA without an else skips silently on CPU: "
            'write `if cuda_only(DEVICE, "what it shows"):`',
        )
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for line in skips.undeclared_branches(cell.source)
    ]


def _tags(cell: NotebookNode) -> list[str]:
    return cell.metadata.get("tags", []) if cell.cell_type == "code" else []


def _lesson_exercises(path: Path, nb: NotebookNode) -> list[Problem]:
    """Predict, then run: enough exercise cells, each answered by the self-check cell right after it."""
    cells = nb.cells
    exercises = [i for i, cell in enumerate(cells) if EXERCISE_TAG in _tags(cell)]
    problems = [
        Problem(path, i, f"exercise cell must be followed by a code cell tagged {SELF_CHECK_TAG!r}")
        for i in exercises
        if i + 1 >= len(cells) or SELF_CHECK_TAG not in _tags(cells[i + 1])
    ]
    problems += [
        Problem(path, i, f"self-check cell must directly follow a cell tagged {EXERCISE_TAG!r}")
        for i, cell in enumerate(cells)
        if SELF_CHECK_TAG in _tags(cell) and (i == 0 or EXERCISE_TAG not in _tags(cells[i - 1]))
    ]
    if len(exercises) < MIN_EXERCISES:
        problems.append(
            Problem(
                path,
                None,
                f"a lesson needs at least {MIN_EXERCISES} code cells tagged "
                f"{EXERCISE_TAG!r} (it has {len(exercises)})",
            )
        )
    return problems


def _shown_code(path: Path, nb: NotebookNode) -> list[copies.Shown]:
    """What a student reads: the chapter's lesson code cells and every cell of the lab's release."""
    found = []
    for lesson in sorted(path.parent.glob("*.ipynb")):
        if is_lab(lesson):
            continue
        try:
            cells = read(lesson).cells
        except BadInput:
            continue  # reported when that notebook itself is linted
        found += [
            copies.shown(f"{lesson.name} cell {i}", c.source)
            for i, c in enumerate(cells)
            if c.cell_type == "code"
        ]
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            visible = SOLUTION_REGION.sub("", cell.source).split(HIDDEN_BEGIN)[0]
            found.append(copies.shown(f"{path.name} cell {i} (in the release)", visible))
    return [s for s in found if s is not None]


def _copied_solutions(path: Path, nb: NotebookNode) -> list[Problem]:
    """A solution that shown code already holds can be assembled by copying: flag it."""
    problems, shown = [], None
    for i, cell in enumerate(nb.cells):
        if not (cell.cell_type == "code" and nbgrader_meta(cell).get("solution")):
            continue
        shown = shown if shown is not None else _shown_code(path, nb)
        found = copies.nearest_copy(copies.solution_code(cell.source), shown)
        if found:
            problems.append(Problem(path, i, f"{cell.metadata['nbgrader'].get('grade_id')}: {found}"))
    return problems


def fix(path: Path) -> bool:
    """Strip outputs and execution counts and normalise metadata in place; True if the file changed."""
    nb = read(path)
    before = nbformat.writes(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        for key in ("execution", "papermill", "collapsed", "scrolled", "ExecuteTime"):
            cell.metadata.pop(key, None)
        hidden = cell.metadata.pop("jupyter", {}).get("source_hidden")
        if hidden:  # a collapsed self-check (or parameters) cell stays collapsed: the only jupyter key kept
            cell.metadata["jupyter"] = {"source_hidden": True}
    nb.metadata = nbformat.from_dict({"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    after = nbformat.writes(nb)
    if after != before:
        path.write_text(after + "\n", encoding="utf-8")
    return after != before


def fix_all(notebooks: list[Path]) -> list[str]:
    """:func:`fix` each notebook; a line per notebook fixed or unreadable."""
    lines = []
    for path in notebooks:
        try:
            if fix(path):
                lines.append(f"fixed {path}")
        except BadInput as err:
            lines.append(str(err))
    return lines
