"""labutils.launch.specs: what the launcher tells every rank, written once and read back as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labutils.launch.ship import Target
from labutils.launch.specs import CellSpec, FunctionSpec, read_spec


def test_a_function_spec_reads_back_with_its_target(tmp_path: Path) -> None:
    spec = FunctionSpec(
        Target("tmp_mod", "outer.fn", str(tmp_path / "tmp_mod.py")),
        "args.pt",
        "results",
        "errors",
        "127.0.0.1",
        29500,
        "gloo",
        2,
        60.0,
        ["/notebook"],
    )
    back = read_spec(spec.write(tmp_path / "spec.json"))
    assert back == spec and isinstance(back, FunctionSpec) and isinstance(back.target, Target)


def test_a_cell_spec_reads_back_with_its_variables(tmp_path: Path) -> None:
    spec = CellSpec("cell.py", "nccl", "errors", {"SMOKE": True, "STEPS": [1, 2], "NAME": "x"})
    back = read_spec(spec.write(tmp_path / "spec.json"))
    assert back == spec and isinstance(back, CellSpec) and back.sys_path == []


def test_a_spec_of_no_known_mode_is_refused(tmp_path: Path) -> None:
    (tmp_path / "spec.json").write_text(json.dumps({"mode": "script", "cell": "c.py"}))
    with pytest.raises(ValueError, match="unknown launch mode 'script'"):
        read_spec(tmp_path / "spec.json")
