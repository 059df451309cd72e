"""graders.boundary.protocol: the typed messages between the grader and its sandboxes, on their own (no sandbox)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from graders.boundary.job_result import JobOutcome, outcome_of
from graders.boundary.protocol import (
    ASK_PROBES,
    KIND_ASK_PROBES,
    SUPERVISOR_STATUSES,
    Cell,
    DoneHeader,
    JobSpec,
    Limits,
    ProbeRequest,
    Ready,
    Status,
    status_named,
)

HONEST = {
    "kind": "done",
    "status": "ok",
    "seconds": 1.5,
    "cpu_seconds": 2,
    "max_rss_mb": 300,
    "output_tail": "out",
    "isolation": ["uid 64000"],
    "cells": {"t": {"ok": True, "error": ""}},
    "exit_code": 0,
    "output_bytes": 3,
}


def test_a_status_is_the_string_reports_and_gradebooks_hold() -> None:
    assert Status.OK == "ok" and f"{Status.CPU_LIMIT}" == "cpu limit" and str(Status.TIMEOUT) == "timeout"
    assert json.dumps({"status": Status.BAD_RESULT}) == '{"status": "bad result"}'
    assert {"memory limit": 1}[Status.MEMORY_LIMIT] == 1
    assert status_named("crashed") is Status.CRASHED and status_named("okay") is None


def test_each_status_explains_itself_in_its_own_words() -> None:
    """The line a gradebook shows for a status (graders.grader.grading reads ``why``): one per status, none shared."""
    whys = [s.why for s in Status]
    assert all(whys) and len(set(whys)) == len(whys)
    assert Status("cpu limit").why == "used more CPU time than the limit (all its processes together)"


def test_the_grader_sends_frames_the_supervisor_reads_back() -> None:
    spec = JobSpec(
        [Cell("cell0", "x = 1"), Cell("t", "assert x", graded=True)],
        Limits(wall_seconds=5.0),
        64001,
        False,
        {"PATH": "/usr/bin"},
        7,
        ["/tmp/venv"],
    )
    assert JobSpec.from_frame(spec.to_frame()) == spec
    probes = ProbeRequest("@probe('t')\ndef t(ns, draw): ...", "lab.py", 2**61, True, ["t"])
    assert ProbeRequest.from_frame(probes.to_frame()) == probes
    assert ProbeRequest.from_frame(b"") == ProbeRequest(file="")
    assert json.loads(ASK_PROBES) == {"kind": KIND_ASK_PROBES}
    assert json.loads(Ready(["onnx"], 1).to_frame()) == {"ready": True, "warm_failed": ["onnx"], "threads": 1}


def test_the_supervisors_header_reads_back_as_sent() -> None:
    header = DoneHeader(Status.TIMEOUT, 1.0, 2.0, 30, "tail", ["note"], {}, -9, 4)
    message = json.loads(header.to_frame())
    assert message["kind"] == "done" and DoneHeader.from_message(message) == header
    done = DoneHeader.from_message(HONEST)
    assert done is not None and done.status is Status.OK and done.cpu_seconds == 2.0
    assert outcome_of(HONEST) == JobOutcome(Status.OK, 1.5, 2.0, 300, "out", ["uid 64000"])


FORGED: dict[str, dict[str, Any]] = {
    "status the grader decides": {"status": "cpu limit"},
    "status unknown": {"status": "fine"},
    "status not text": {"status": ["ok"]},
    "seconds as text": {"seconds": "1"},
    "seconds a bool": {"seconds": True},
    "rss a float": {"max_rss_mb": 3.5},
    "tail missing": {"output_tail": None},
}


@pytest.mark.parametrize("change", FORGED.values(), ids=FORGED.keys())
def test_a_header_with_a_forged_field_is_a_bad_result(change: dict[str, Any]) -> None:
    assert DoneHeader.from_message({**HONEST, **change}) is None
    assert outcome_of({**HONEST, **change}).status is Status.BAD_RESULT


def test_what_a_header_carries_is_cut_to_what_the_grader_keeps() -> None:
    done = DoneHeader.from_message(
        {
            **HONEST,
            "output_tail": "x" * 10_000,
            "isolation": ["n" * 1000, 5, None],
            "exit_code": "0",
            "output_bytes": 2.5,
        }
    )
    assert done is not None
    assert len(done.output_tail) == 4096 and done.isolation == ["n" * 300]
    assert (done.exit_code, done.output_bytes) == (0, 0)
    not_a_list = DoneHeader.from_message({**HONEST, "isolation": "uid"})
    assert not_a_list is not None and not_a_list.isolation == []
    assert Status.CPU_LIMIT not in SUPERVISOR_STATUSES and Status.OK in SUPERVISOR_STATUSES
