"""graders.grader.sandbox.cgroups without a cgroup file system: which leftover worker groups a grader removes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graders.grader.sandbox import cgroups


def test_a_dead_graders_empty_groups_are_swept_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cgroups, "_swept", set())
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    dead = int(gone.stdout)  # a pid that has just exited (not reused in the moment this test takes)
    stale = tmp_path / f"labs-{dead}-7f41"
    busy = tmp_path / f"labs-{dead}-7f42"  # still lists a process: rmdir fails, as the kernel's would
    mine = tmp_path / f"labs-{os.getpid()}-7f43"  # a live grader's
    hub = tmp_path / "labs-hub-class-ada"  # not a worker's group
    for folder in (stale, busy, mine, hub):
        folder.mkdir()
    (busy / "cgroup.procs").write_text("4242\n")

    assert cgroups.sweep_stale(tmp_path) == [stale]
    assert not stale.exists() and busy.exists() and mine.exists() and hub.exists()
    stale.mkdir()
    assert cgroups.sweep_stale(tmp_path) == [] and stale.exists()  # once per base and process
