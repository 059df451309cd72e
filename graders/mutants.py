"""Wrong solutions, checked fast: one kernel runs the lab once, then swaps each wrong solution into
its exercise and re-runs that exercise's test cells; the correct solution is restored after each.

This is the cheap half of `labs check` (``--thorough`` grades every wrong solution through nbgrader
instead). A wrong solution must fail at least one test cell of its own exercise.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from ci.kernels import WarmKernel, start_warm_kernel
from graders.gradebook_course import CellScore


def exercise_tests(nb: nbformat.NotebookNode) -> dict[str, list[nbformat.NotebookNode]]:
    """Solution grade_id -> the graded test cells that follow it, up to the next solution cell."""
    groups: dict[str, list[nbformat.NotebookNode]] = {}
    current: str | None = None
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            current = meta["grade_id"]
            groups[current] = []
        elif meta.get("grade") and cell.cell_type == "code" and current is not None:
            groups[current].append(cell)
    return groups


def _run(kernel: WarmKernel, code: str, timeout: float) -> bool:
    reply = kernel.client.execute_interactive(code, timeout=timeout, output_hook=lambda msg: None,
                                              store_history=False)
    return reply["content"]["status"] == "ok"


def grade_wrong_solutions(lab: Path, wrong: list[tuple[str, Path]], env: dict[str, str], workdir: Path,
                          timeout: float = 300) -> dict[str, list[CellScore]]:
    """Wrong-solution file name -> scores of its exercise's test cells, from one kernel."""
    nb = nbformat.read(lab, as_version=4)
    groups = exercise_tests(nb)
    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    workdir.mkdir(parents=True, exist_ok=True)
    kernel = start_warm_kernel(env)
    try:
        kernel.ready(workdir)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and not _run(kernel, cell.source, timeout):
                raise RuntimeError(f"{lab}:{index}: the source lab fails before wrong solutions can be tried")
        scores: dict[str, list[CellScore]] = {}
        for grade_id, path in wrong:
            if grade_id not in groups:
                continue
            _run(kernel, path.read_text(encoding="utf-8"), timeout)
            scores[path.name] = [
                CellScore(t.metadata["nbgrader"]["grade_id"],
                          float(t.metadata["nbgrader"]["points"]) if _run(kernel, t.source, timeout) else 0.0,
                          float(t.metadata["nbgrader"]["points"]))
                for t in groups[grade_id]]
            if not _run(kernel, solutions[grade_id], timeout):
                raise RuntimeError(f"{lab}: restoring the solution {grade_id!r} failed")
        return scores
    finally:
        kernel.shutdown()
