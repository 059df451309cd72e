"""One grading job, as it runs inside the sandbox: execute the cells, then the probes.

The trusted grader's :class:`~graders.boundary.protocol.Job` arrives as :mod:`graders.boundary.protocol` frames (the cells, then the probes);
what comes back is plain data (``dict``), sent on :mod:`graders.boundary.wire`, which carries nothing but numbers, short strings and tensors.
Nothing here decides a score: test-cell results and observations are only claims, checked by the
grader against a reference run.
"""

from __future__ import annotations

import linecache
import os
import sys
from typing import Any

from graders.boundary.protocol import Cell

MESSAGE_CHARS = 500
#: Set in the job before any cell runs: ``torch.load`` never unpickles objects, however it is called
#: (``torch.load(f, **{"weights_" + "only": False})`` passes the vetting's keyword check).
SAFE_ENVIRONMENT = {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1"}
#: The grader's modules in the job, which the probes import after the notebook has run: what the notebook
#: changed in them (``rules.forbidden = ...``) is put back before the probes run, and the probes then report it.
GUARDED_MODULES = (
    "graders.inside.rules",
    "graders.inside.probing",
    "graders.inside.contracts",
    "graders.inside.draws",
)
_guarded: dict[str, tuple[Any, dict[str, Any]]] = {}


def _error_text(err: BaseException) -> str:
    try:
        text = f"{type(err).__name__}: {err}"
    except Exception:  # noqa: BLE001 - a submission's exception may refuse str()
        text = type(err).__name__
    return text[:MESSAGE_CHARS]


def execute_cells(cells: list[Cell]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Run ``cells`` in one IPython shell; per graded cell ``{"ok", "error"}``, and the namespace."""
    from IPython.core.interactiveshell import InteractiveShell

    _guard()
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

    changed = _restore()
    if not source:
        return {}
    if changed:
        tampered = f"the notebook changed the grader's modules ({', '.join(changed[:3])})"[:MESSAGE_CHARS]
        return {
            grade_id: {"error": tampered}
            for grade_id in load_probes(source, filename)
            if not only or grade_id in only
        }
    if traceback:  # the source's lines in the frames shown to the instructor
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return {
        grade_id: run_probe(found, ns, salt, traceback)
        for grade_id, found in load_probes(source, filename).items()
        if not only or grade_id in only
    }


def _guard() -> None:
    """Note the grader's modules as they are before any cell runs."""
    for name in GUARDED_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            _guarded[name] = (module, dict(vars(module)))


def _restore() -> list[str]:
    """Put back what the notebook changed in the grader's modules; the names it changed."""
    changed = []
    for name, (module, members) in _guarded.items():
        if sys.modules.get(name) is not module:
            sys.modules[name] = module
            changed.append(name)
        now = vars(module)
        for key in sorted(set(now) | set(members)):
            if now.get(key, _guarded) is not members.get(key, _guarded):
                changed.append(f"{name}.{key}")
                if key in members:
                    setattr(module, key, members[key])
                else:
                    delattr(module, key)
    return changed
