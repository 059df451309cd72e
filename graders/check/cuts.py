"""Where a self-check run of one exercise may end: after the exercise's last test cell, unless a later
cell rebinds a name the replacement solution binds (in the whole notebook that later cell would be
what the exercise's probe calls, so the run must not end before it).

What a later cell does to the *source's* exercise is checked by running the source cut there
(:mod:`graders.check.selfcheck`); this covers what the source cannot show: a wrong or right solution that
defines a name some later cell defines too.
"""

from __future__ import annotations

import ast

import nbformat

from graders.coursedir import nbgrader_meta
from graders.grader.parsing import parsed

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def bound_names(source: str) -> set[str] | None:
    """Names a cell binds at its top level (defs, classes, assignments, imports, loop and with targets);
    None when it cannot be read as Python (IPython magics): anything may be bound then."""
    tree = parsed(source)
    if tree is None:
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, DEFINITIONS):  # what its body binds is its own
            names.add(node.name)
            continue
        for sub in ast.walk(node):
            if isinstance(sub, DEFINITIONS):
                names.add(sub.name)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in sub.names)
            elif isinstance(sub, ast.Global):
                names.update(sub.names)
    return names


def code_after(nb: nbformat.NotebookNode, grade_id: str) -> list[str]:
    """The sources of the code cells after the cell ``grade_id`` (empty when there is none or no such cell)."""
    ids = [nbgrader_meta(c).get("grade_id") for c in nb.cells]
    if grade_id not in ids:
        return []
    return [c.source for c in nb.cells[ids.index(grade_id) + 1 :] if c.cell_type == "code"]


def may_cut(nb: nbformat.NotebookNode, last_test: str, replacement: str) -> bool:
    """Whether a run of ``nb`` whose solution was replaced by ``replacement`` may end after ``last_test``."""
    own = bound_names(replacement)
    if own is None:
        return False
    for source in code_after(nb, last_test):
        later = bound_names(source)
        if later is None or later & own:
            return False
    return True
