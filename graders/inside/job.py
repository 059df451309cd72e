"""One grading job, as it runs inside the sandbox: execute the cells, then the probes.

The trusted grader's ``Job`` arrives as :mod:`graders.boundary.protocol` frames (the cells, then the probes);
what comes back is plain data (``dict``), sent on :mod:`graders.boundary.wire`, which carries nothing but numbers, short strings and tensors.
Nothing here decides a score: test-cell results and observations are only claims, checked by the
grader against a reference run.
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field
from typing import Any

from graders.boundary.protocol import Cell

MESSAGE_CHARS = 500
#: Set in the job before any cell runs: ``torch.load`` never unpickles objects, however it is called
#: (``torch.load(f, **{"weights_" + "only": False})`` passes the vetting's keyword check).
SAFE_ENVIRONMENT = {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1"}


@dataclass
class Job:
    """What the sandbox runs: the notebook's cells in order, then the lab's probes."""

    cells: list[Cell]
    probes_source: str = ""
    probes_file: str = "probes.py"
    salt: int = 0
    env: dict[str, str] = field(default_factory=dict)
    traceback: bool = False  # probe failures carry their last frames (reference runs of the source only)
    probes_only: list[str] = field(default_factory=list)  # grade_ids whose probes run; empty: all of them


def _error_text(err: BaseException) -> str:
    try:
        text = f"{type(err).__name__}: {err}"
    except Exception:  # noqa: BLE001 - a submission's exception may refuse str()
        text = type(err).__name__
    return text[:MESSAGE_CHARS]


def execute_cells(cells: list[Cell]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Run ``cells`` in one IPython shell; per graded cell ``{"ok", "error"}``, and the namespace."""
    from IPython.core.interactiveshell import InteractiveShell

    os.environ.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
    os.environ.update(SAFE_ENVIRONMENT)
    shell = InteractiveShell.instance()
    if shell.display_formatter is not None:  # nobody sees pictures here: do not render them
        shell.display_formatter.active_types = ["text/plain"]
    results: dict[str, dict[str, Any]] = {}
    for cell in cells:
        outcome = shell.run_cell(cell.source, store_history=False)
        err = outcome.error_before_exec or outcome.error_in_exec
        if cell.graded:
            results[cell.key] = {"ok": err is None, "error": _error_text(err) if err else ""}
    return results, shell.user_ns


def run_probes(
    source: str,
    filename: str,
    ns: dict[str, Any],
    salt: int,
    traceback: bool = False,
    only: list[str] | None = None,
) -> dict[str, Any]:
    """The probes of a probe file's ``source`` (all, or those ``only`` names) on a notebook's namespace."""
    from graders.inside.probing import (  # torch: only where probes run (cells and lint stay light)
        load_probes,
        run_probe,
    )

    if not source:
        return {}
    if traceback:  # the source's lines in the frames shown to the instructor
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return {
        grade_id: run_probe(found, ns, salt, traceback)
        for grade_id, found in load_probes(source, filename).items()
        if not only or grade_id in only
    }
