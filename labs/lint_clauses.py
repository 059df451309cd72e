"""`labs lint`: every graded exercise lists its statement's clauses beside the case that checks each.

A probe declares them (``@probe("test_x", clauses={"returns a new tensor": "contracts", "any number of rows,
none included": "draw.sizes(0"})``). Read from the probe file's syntax tree, without running it: a graded test
cell whose probe lists no clauses, or a clause whose case is neither ``contracts`` nor text of the probe's own
code, is a problem.
"""

from __future__ import annotations

import ast
from pathlib import Path

from nbformat import NotebookNode

from graders.coursedir import nbgrader_meta, probes_file
from labs.lint_rules import Problem

BUILT_IN_CASES = {
    "contracts": "every call's side effects, compared with the reference's (graders.inside.contracts)"
}


def declared_clauses(source: str) -> dict[str, tuple[dict[str, str] | None, str]]:
    """grade_id -> (its probe's clauses, or None when it lists none or not as a literal; the probe's code)."""
    found: dict[str, tuple[dict[str, str] | None, str]] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            if not (
                isinstance(deco, ast.Call)
                and getattr(deco.func, "id", None) == "probe"
                and deco.args
                and isinstance(deco.args[0], ast.Constant)
                and isinstance(deco.args[0].value, str)
            ):
                continue
            clauses = next((k.value for k in deco.keywords if k.arg == "clauses"), None)
            body = "".join(ast.get_source_segment(source, stmt) or "" for stmt in node.body)
            found[deco.args[0].value] = (_literal(clauses), body)
    return found


def _literal(node: ast.expr | None) -> dict[str, str] | None:
    try:
        value = ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None
    ok = (
        isinstance(value, dict)
        and value
        and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    )
    return value if ok else None


def clauses_have_cases(path: Path, nb: NotebookNode) -> list[Problem]:
    """Each graded test cell's probe lists its clauses, each with a case the probe has."""
    probes = probes_file(path)
    try:
        declared = declared_clauses(probes.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []  # the lab's probes check names an unreadable probe file
    problems = []
    for index, cell in enumerate(nb.cells):
        meta = nbgrader_meta(cell)
        grade_id = meta.get("grade_id")
        if not (meta.get("grade") and isinstance(grade_id, str) and grade_id in declared):
            continue
        clauses, body = declared[grade_id]
        if clauses is None:
            problems.append(
                Problem(
                    path,
                    index,
                    f"probe {grade_id} ({probes.name}) lists no clauses of the "
                    "exercise's statement: @probe(..., clauses={clause: case})",
                )
            )
            continue
        problems += [
            Problem(
                path,
                index,
                f"probe {grade_id} ({probes.name}): clause {clause!r} names the case "
                f"{case!r}, which is not in the probe's code (nor one of {sorted(BUILT_IN_CASES)})",
            )
            for clause, case in clauses.items()
            if case not in BUILT_IN_CASES and case not in body
        ]
    return problems
