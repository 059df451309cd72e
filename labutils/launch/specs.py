"""What the launcher (:mod:`labutils.launch.launcher`) tells each rank (:mod:`labutils.launch.worker`): one
typed spec per mode, written once as ``spec.json`` in the run's temporary folder and read by every rank.

* :class:`CellSpec`: ``%%torchrun`` (:func:`labutils.launch.run_cell`), the cell run as a script;
* :class:`FunctionSpec`: :func:`labutils.launch.launch`, a function called on every rank.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from labutils.launch.ship import Target


@dataclass(frozen=True)
class CellSpec:
    """A ``%%torchrun`` cell: its file, the ``--vars`` values and the backend; torchrun sets the ranks."""

    cell: str  # the cell's source, as a file
    backend: str
    errors: str  # the folder a failing rank writes its report into
    variables: dict[str, Any] = field(default_factory=dict)  # JSON values: the script's globals
    sys_path: list[str] = field(default_factory=list)  # the notebook's import path, put before the rank's

    def write(self, path: Path) -> Path:
        """Write the spec to ``path``; returns it."""
        path.write_text(json.dumps({"mode": "cell", **asdict(self)}))
        return path


@dataclass(frozen=True)
class FunctionSpec:
    """A function called on every rank of a process group that meets at the launcher's TCP store."""

    target: Target  # where a rank finds the function
    args: str  # torch.save file of the arguments
    results: str  # the folder each rank saves its result into (rank<k>.pt)
    errors: str  # the folder a failing rank writes its report into
    host: str
    port: int
    backend: str
    world_size: int
    pg_timeout: float
    sys_path: list[str] = field(default_factory=list)

    def write(self, path: Path) -> Path:
        """Write the spec to ``path``; returns it."""
        path.write_text(json.dumps({"mode": "function", **asdict(self)}))
        return path


def read_spec(path: Path) -> CellSpec | FunctionSpec:
    """The spec a launcher wrote to ``path``."""
    data = json.loads(path.read_text())
    mode = data.pop("mode")
    if mode == "cell":
        return CellSpec(**data)
    if mode == "function":
        return FunctionSpec(**{**data, "target": Target(**data["target"])})
    raise ValueError(f"{path}: unknown launch mode {mode!r}")
