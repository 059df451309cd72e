"""ci/lanes.py: make test's stages in lanes (one after another within a lane, lanes side by side)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
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
burn_unwaited:
\t@python3 -c "$$BURN_THEN_EXIT_UNWAITED"
leave_behind:
\t@sleep 6 > /dev/null 2>&1 &
"""

# A child burns 0.5 s of CPU and exits; its parent never waits for it (as a sandbox killed whole is never).
BURN_THEN_EXIT_UNWAITED = """
import os, time
if os.fork() == 0:
    while time.process_time() < 0.5:
        pass
    os._exit(0)
time.sleep(2)
os._exit(0)
"""


def lanes(folder: Path, *arguments: str) -> subprocess.CompletedProcess:
    (folder / "Makefile").write_text(MAKEFILE)
    return subprocess.run(
        [
            sys.executable,
            str(LANES),
            *arguments,
            "--make",
            f"make -C {folder}",
            "--logs",
            str(folder / "logs"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BURN_THEN_EXIT_UNWAITED": BURN_THEN_EXIT_UNWAITED},
    )


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
    summary = done.stdout[done.stdout.index("lanes: summary") :]
    assert (
        "broken        failed" in summary
        and "after_broken  not run" in summary
        and "ok            passed" in summary
    )
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


def test_a_stage_counts_the_cpu_of_processes_it_never_waited_for(tmp_path: Path):
    if not os.access("/sys/fs/cgroup/cpuacct", os.W_OK):
        pytest.skip("needs cgroup v1's cpuacct, writable (root): elsewhere only waited-for processes count")
    groups_before = set(Path("/sys/fs/cgroup/cpuacct").glob("labs-lanes-*"))  # make test's own lanes have one
    done = lanes(tmp_path, "burn_unwaited")
    assert done.returncode == 0, done.stdout + done.stderr
    cpu = float(done.stdout.split("burn_unwaited passed in ")[1].split("(")[1].split(" CPU-s")[0])
    assert cpu >= 0.5  # the forked child burnt 0.5 s after its parent exited; nobody waited for it
    assert set(Path("/sys/fs/cgroup/cpuacct").glob("labs-lanes-*")) == groups_before  # its group is gone


def test_a_stage_that_leaves_a_process_running_is_named(tmp_path: Path):
    if not os.access("/sys/fs/cgroup/cpuacct", os.W_OK):
        pytest.skip(
            "needs cgroup v1's cpuacct, writable (root): elsewhere the lanes cannot see what a stage left"
        )
    groups_before = set(Path("/sys/fs/cgroup/cpuacct").glob("labs-lanes-*"))
    done = lanes(tmp_path, "leave_behind")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lanes: leave_behind left 1 processes running after it ended" in done.stdout, done.stdout
    for group in (
        set(Path("/sys/fs/cgroup/cpuacct").glob("labs-lanes-*")) - groups_before
    ):  # once the sleep ends
        for _ in range(100):
            try:
                (group / "leave_behind").rmdir()
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
