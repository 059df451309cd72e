"""The grader's boundary with its sandboxes (#39): what a job may send back, how long it may take,
what of the machine it sees, and what of the grader's machine a student sees in return.

The sandboxed tests run attack jobs straight on sandbox workers (no notebook vetting in the way: what
is tested is the boundary, whatever reached the sandbox), beside an honest job in the same pool.
"""

from __future__ import annotations

import json
import resource
import struct
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from graders.boundary import wire
from graders.boundary.job_result import HEADER_VALUES, read_message
from graders.grader.sandbox.worker import HOST_FILES, etc_files
from graders.nbgrader.reports import for_student
from tests.test_grade_attacks import CHAPTER, FULL, LAB, _attack
from tests.test_sandbox import PROBE

needs_bwrap = pytest.mark.usefixtures("bwrap")
MIB = 1 << 20
WALL = 8.0  # the batch's --timeout: the sleeping job must end here, not at the grader's ceiling 30 s later


def empty_lists_bomb(size: int = 64 * MIB) -> bytes:
    """A wire message of ``size`` bytes whose JSON is ``[[],[],...]``: 22 million values in 64 MiB."""
    count = (size - 8 - 4) // 3
    document = b"[" + b"[]," * count + b"[]]"
    return struct.pack("<Q", len(document)) + document


def test_a_result_of_millions_of_empty_lists_is_refused_before_parsing() -> None:
    bomb = empty_lists_bomb()
    assert len(bomb) <= 64 * MIB
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    try:
        with pytest.raises(wire.WireError, match="values"):
            wire.decode(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * MIB, peak
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before < 200 * MIB


def test_the_value_count_before_parsing_still_lets_honest_results_through() -> None:
    honest = {"probes": {"a": {"value": list(range(300_000))}, "b": {"value": ({"k": 1.5}, "x, y: [z]")}}}
    assert wire.decode(wire.encode(honest)) == honest
    assert wire.values_in(b'[[],{"a":1}]') == 6  # every value, key included, is bounded


def test_a_header_of_too_many_values_is_refused() -> None:
    assert read_message(json.dumps({"status": "ok", "cells": {}}).encode()) == {"status": "ok", "cells": {}}
    assert read_message(json.dumps({"status": "ok", "cells": [[]] * HEADER_VALUES}).encode()) is None


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "bad file: /tmp/x/submitted/ada/ch/lab.ipynb: not a notebook (invalid JSON: at line 1)",
            "bad file: lab.ipynb: not a notebook (invalid JSON: at line 1)",
        ),
        (
            "bad file: /home/me/My Course/subs/ada/ch/lab.ipynb: is a folder",
            "bad file: lab.ipynb: is a folder",
        ),
        (
            "grader error: (PermissionError: [Errno 13] Permission denied: '/root/build/x.db')",
            "grader error: (PermissionError: [Errno 13] Permission denied: 'x.db')",
        ),
        ("visible tests failed: AssertionError: x / y and 1/2 and a/b differ", None),
        ("hidden check 'ratio of tensor([1., 2.]) / 3': 2 of 5 cases differ", None),
    ],
)
def test_student_text_cuts_absolute_paths_and_nothing_else(text: str, shown: str | None) -> None:
    assert for_student(text) == (shown or text)


BOMB = """
import os, struct, sys
def _result_fd():
    frame = sys._getframe()
    while frame is not None:
        pipes = frame.f_locals.get("pipes")
        if type(pipes) is dict and "result" in pipes:
            return pipes["result"]
        frame = frame.f_back
def _bomb(*args):
    document = b"[" + b"[]," * (((64 << 20) - 12) // 3) + b"[]]"
    view = memoryview(struct.pack("<Q", len(document)) + document)
    fd = _result_fd()
    while view:
        view = view[os.write(fd, view):]
    os._exit(0)
scale = relu_grad = _bomb
"""
CLOSE_AND_SLEEP = (
    "import os, time\nfor fd in range(64):\n    try:\n        os.close(fd)\n    except OSError:\n"
    "        pass\ntime.sleep(1000)\n"
)
LOOK_AROUND = """
import os
def lowest_oom_adjustment():
    lowest = int(open("/proc/self/oom_score_adj").read())
    for value in (500, 0, -1, -500, -1000):
        try:
            with open("/proc/self/oom_score_adj", "w") as adj:
                adj.write(str(value))
        except OSError:
            break
        lowest = value
    return lowest
evidence = {"etc": sorted(os.listdir("/etc")), "sys": sorted(os.listdir("/sys")),
            "cgroup": os.path.exists("/sys/fs/cgroup"), "accounts": open("/etc/passwd").read().count(chr(10)),
            "counters": sorted(n for _, _, names in os.walk("/sys") for n in names
                               if n.split(".")[0] in ("memory", "cpu", "cpuacct", "pids", "cgroup", "io")),
            "oom": lowest_oom_adjustment()}
"""


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The fixture lab's reference, then an honest job, a result bomb, a job that closes its pipes and
    sleeps, and one that looks around, side by side on two sandboxes under a WALL-second limit."""
    from graders.boundary.protocol import Cell, Job, Limits
    from graders.grader.cells import Restored, reference_cells
    from graders.grader.grading import Pool, load_lab, reference_runs, score, warm_modules

    lab, salt = load_lab(LAB), 12345
    notebooks = {
        "honest": nbformat.read(LAB, as_version=4),
        "bomb": _attack(BOMB),
        "sleeper": _attack(CLOSE_AND_SLEEP),
    }
    cells = {name: reference_cells(nb) for name, nb in notebooks.items()}  # as written: nothing vetted away
    jobs = {name: Job(c, lab.probes_source, lab.probes_file, salt) for name, c in cells.items()}
    jobs["looker"] = Job([Cell("look", LOOK_AROUND)], PROBE, "spy.py", salt=1)
    pool = Pool(
        2,
        Limits(wall_seconds=WALL, cpu_seconds=60),
        1,
        True,
        tmp_path_factory.mktemp("logs"),
        warm_modules([lab]),
    )
    try:
        reference = reference_runs(pool.ready(), {(CHAPTER, lab.name): lab}, salt)[(CHAPTER, lab.name)]
        rss_before, started = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, time.monotonic()
        with ThreadPoolExecutor(2) as running:
            outcomes = dict(zip(jobs, running.map(pool.run, jobs.values()), strict=True))
        elapsed = time.monotonic() - started
        rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before
    finally:
        pool.close()
    points = {
        name: {c.grade_id: c.score for c in score(lab, Restored(cells[name]), outcomes[name], reference)}
        for name in cells
    }
    return {"outcomes": outcomes, "points": points, "elapsed": elapsed, "rss_growth": rss_growth}


@pytest.mark.grading
@needs_bwrap
def test_honest_job_beside_the_attacks_keeps_full_marks(batch: dict) -> None:
    assert batch["points"]["honest"] == FULL, batch["outcomes"]["honest"].status


@pytest.mark.grading
@needs_bwrap
def test_a_result_bomb_costs_its_submission_and_nothing_else(batch: dict) -> None:
    assert batch["outcomes"]["bomb"].status == "bad result"
    assert batch["points"]["bomb"] == dict.fromkeys(FULL, 0.0)
    assert batch["rss_growth"] < 600 * MIB, batch["rss_growth"]  # decoding it all once cost 1.6 GiB more


@pytest.mark.grading
@needs_bwrap
def test_a_job_that_closes_its_pipes_and_sleeps_ends_at_its_deadline(batch: dict) -> None:
    outcome = batch["outcomes"]["sleeper"]
    assert outcome.status == "timeout"
    assert WALL <= outcome.seconds < WALL + 10, (
        outcome.seconds
    )  # the real time, not 0, not the grader's ceiling
    assert batch["points"]["sleeper"] == dict.fromkeys(FULL, 0.0)
    assert batch["elapsed"] < WALL + 20, batch["elapsed"]  # the grader's ceiling would have been WALL + 30


@pytest.mark.grading
@needs_bwrap
def test_a_job_sees_no_cgroup_counters_and_a_minimal_etc(batch: dict) -> None:
    outcome = batch["outcomes"]["looker"]
    assert outcome.status == "ok", (outcome.status, outcome.output_tail)
    seen = outcome.result.probes["evidence"].value
    allowed = {Path(p).name for p in HOST_FILES if p.startswith("/etc/")} | set(etc_files(0))
    assert set(seen["etc"]) <= allowed and "passwd" in seen["etc"], seen["etc"]
    assert seen["accounts"] == 2  # root and the job: none of the host's
    assert seen["sys"] == ["devices"] and not seen["cgroup"] and seen["counters"] == [], seen


@pytest.mark.grading
@needs_bwrap
def test_a_job_cannot_lower_its_oom_score_below_the_graders(batch: dict) -> None:
    """Jobs start at 1000, the OOM killer's first choice; they may come back down to the grader's own
    adjustment (0 at least), never below: the machine's OOM killer would take the grader first."""
    seen = batch["outcomes"]["looker"].result.probes["evidence"].value
    grader = int(Path("/proc/self/oom_score_adj").read_text())
    assert seen["oom"] >= max(0, grader), seen["oom"]
