"""ci/lanes.py: make test's stages in lanes (one after another within a lane, lanes side by side)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

LANES = ROOT / "ci" / "lanes.py"

# Two stages that each wait for the other's file: they finish only when their lanes run side by side.
MAKEFILE = """\
meet_a:
\ttouch a; for i in $$(seq 600); do [ -f b ] && exit 0; sleep 0.05; done; exit 9
meet_b:
\ttouch b; for i in $$(seq 600); do [ -f a ] && exit 0; sleep 0.05; done; exit 9
ok:
\t@echo fine
broken:
\t@echo "the reason it broke"; exit 3
after_broken:
\ttouch after_broken
niceness:
\t@python3 -c "import os; print(os.nice(0))"
"""


def lanes(folder: Path, *arguments: str) -> subprocess.CompletedProcess:
    (folder / "Makefile").write_text(MAKEFILE)
    return subprocess.run([sys.executable, str(LANES), *arguments, "--make", f"make -C {folder}",
                           "--logs", str(folder / "logs")], capture_output=True, text=True, timeout=120)


def test_lanes_run_side_by_side_and_stages_in_order(tmp_path: Path):
    done = lanes(tmp_path, "meet_a,ok", "meet_b")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lanes: all passed" in done.stdout
    assert (tmp_path / "logs" / "ok.log").read_text().strip() == "fine"
    assert done.stdout.index("meet_a passed") < done.stdout.index("ok started")


def test_a_failed_stage_stops_its_lane_not_the_others(tmp_path: Path):
    done = lanes(tmp_path, "broken,after_broken", "ok")
    assert done.returncode == 1
    assert not (tmp_path / "after_broken").exists()
    assert "the reason it broke" in done.stdout  # the failed stage's log, printed whole
    summary = done.stdout[done.stdout.index("lanes: summary"):]
    assert "broken        failed" in summary and "after_broken  not run" in summary and "ok            passed" in summary
    assert "lanes: failed: broken, after_broken" in summary


def test_background_stages_run_at_a_lower_cpu_priority(tmp_path: Path):
    done = lanes(tmp_path, "niceness", "--background", "niceness,a_stage_no_lane_runs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert int((tmp_path / "logs" / "niceness.log").read_text()) == min(os.nice(0) + 10, 19)  # 19: the lowest


@pytest.mark.parametrize("arguments", [["unit,grading", "grading"], [",,"]])
def test_bad_lanes_are_one_line_exit_2(tmp_path: Path, arguments: list[str]):
    done = lanes(tmp_path, *arguments)
    assert done.returncode == 2
    assert done.stderr.startswith("lanes: error: ") and done.stderr.count("\n") == 1, done.stderr
