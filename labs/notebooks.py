"""Finding and reading course notebooks, with one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat import NotebookNode

NotebookPath = Path
# What `labs run` injects into a notebook's parameters cell (papermill), and all that cell may hold.
PARAMETERS = ("DEVICE", "SMOKE")


def parameters(device: str, smoke: bool) -> dict[str, str | bool]:
    """The values of :data:`PARAMETERS` a run injects, by name."""
    return dict(zip(PARAMETERS, (device, smoke), strict=True))


class BadInput(Exception):
    """A user-facing input problem: reported as one line, exit code 2."""


def discover(paths: list[Path]) -> list[NotebookPath]:
    """Every ``.ipynb`` under ``paths`` (files or folders), sorted, checkpoints and build output skipped."""
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise BadInput(f"{path}: no such file or directory")
        if path.is_file():
            if path.suffix != ".ipynb":
                raise BadInput(f"{path}: not a notebook (expected a .ipynb file)")
            found.append(path)
            continue
        found.extend(p for p in path.rglob("*.ipynb") if not _ignored(p.relative_to(path)))
    return sorted(dict.fromkeys(found))


def _ignored(relative: Path) -> bool:
    """Checkpoints, hidden folders and build output below the folder the user named."""
    return any(part.startswith(".") or part in {"build", "__pycache__"} for part in relative.parts[:-1])


def read(path: Path) -> NotebookNode:
    """Read a notebook, turning invalid JSON or an invalid notebook into a one-line BadInput."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or "cells" not in data:
            raise BadInput(f"{path}: not a notebook (JSON without a 'cells' list)")
        return nbformat.reads(json.dumps(data), as_version=4)
    except json.JSONDecodeError as err:
        raise BadInput(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    except BadInput:
        raise
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text") from None
    except Exception as err:  # noqa: BLE001 - nbformat raises several types for a malformed notebook
        raise BadInput(f"{path}: not a valid notebook ({type(err).__name__}: {err})") from None


def code_cells(nb: NotebookNode) -> list[NotebookNode]:
    """The notebook's code cells, in order."""
    return [cell for cell in nb.cells if cell.cell_type == "code"]
