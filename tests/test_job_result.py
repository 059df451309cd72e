"""graders.boundary.job_result: what comes back from a job, read as hostile, handed on typed."""

from __future__ import annotations

import json

import pytest
import torch

from graders.boundary import wire
from graders.boundary.job_result import (
    EXCERPT_CHARS,
    CellRun,
    Contracts,
    Done,
    JobOutcome,
    ProbeRecord,
    Said,
    completed,
    job_result,
    supervisor_said,
)
from graders.boundary.protocol import Status

HEADER = {
    "kind": "done",
    "status": "ok",
    "seconds": 1.0,
    "cpu_seconds": 1.0,
    "max_rss_mb": 1,
    "output_tail": "",
    "cells": {"test_a": {"ok": True, "error": ""}, "test_b": {"ok": False, "error": "x" * 1000}},
}


def _result(probes: object) -> bytes:
    return wire.encode({"probes": probes})


def _done(header: dict) -> Done:
    """The supervisor's final header as the worker gets it: read at the boundary."""
    said = supervisor_said(json.dumps(header).encode())
    assert said.done is not None
    return said.done


CELLS = _done(HEADER).cells


def test_an_honest_result_is_typed_all_the_way_down() -> None:
    contracts = {
        "effects": [[1, "scale", ["x: values"]]],
        "calls": 2,
        "varied": {"scale(inplace)": ["non-default"]},
    }
    result = job_result(
        CELLS,
        _result(
            {
                "test_a": {"value": [torch.ones(2), 3]},
                "test_b": {"error": "ValueError: v", "contracts": contracts},
            }
        ),
    )
    assert result is not None
    assert result.cells == {"test_a": CellRun(True, ""), "test_b": CellRun(False, "x" * EXCERPT_CHARS)}
    a, b = result.probes["test_a"], result.probes["test_b"]
    assert (
        a.error is None and a.contracts is None and torch.equal(a.value[0], torch.ones(2)) and a.value[1] == 3
    )
    assert b == ProbeRecord(
        None, "ValueError: v", Contracts({(1, "scale"): ["x: values"]}, {"scale(inplace)": ["non-default"]})
    )


@pytest.mark.parametrize(
    "probes",
    [
        {"test_a": {"value": 1, "error": "both"}},
        {"test_a": {"error": 5}},
        {"test_a": {}},
        {"test_a": {"value": 1, "contracts": [1]}},
        {"test_a": [1]},
        [1, 2],
    ],
)
def test_a_malformed_probe_record_makes_the_whole_result_bad(probes: object) -> None:
    assert job_result(CELLS, _result(probes)) is None
    outcome = completed(_done(HEADER), _result(probes))
    assert outcome.status is Status.BAD_RESULT and outcome.result is None


@pytest.mark.parametrize(
    "cells",
    [
        None,
        [],
        {"test_a": {"ok": 1, "error": ""}},
        {"test_a": {"ok": True}},
        {f"c{i}": {"ok": True, "error": ""} for i in range(10_001)},
    ],
)
def test_malformed_cell_records_make_the_result_bad(cells: object) -> None:
    done = _done({**HEADER, "cells": cells})
    assert done.cells is None and done.outcome.status is Status.OK
    assert job_result(done.cells, _result({})) is None
    assert completed(done, _result({})).status is Status.BAD_RESULT


def test_malformed_contract_entries_are_dropped_not_trusted() -> None:
    contracts = Contracts.from_wire(
        {
            "effects": [[0, "f", ["x"]], [[0], "f", ["y"]], [1, "g", "xyz"], "junk", [2, "h", [1]]],
            "varied": {"f(a)": ["falsy"], "g(b)": "non-default", 3: ["x"]},
        }
    )
    assert contracts == Contracts({(0, "f"): ["x"]}, {"f(a)": ["falsy"]})
    assert Contracts.from_wire({"effects": "no", "varied": []}) == Contracts()


def test_a_result_that_is_not_ok_is_not_read() -> None:
    outcome = completed(_done({**HEADER, "status": "timeout"}), b"\xff not the wire format")
    assert outcome.status is Status.TIMEOUT and outcome.result is None


def test_what_the_supervisor_says_is_one_of_three_things() -> None:
    assert supervisor_said(json.dumps({"kind": "probes?"}).encode()) == Said(asks_for_probes=True)
    assert supervisor_said(json.dumps(HEADER).encode()) == Said(
        done=Done(
            JobOutcome(Status.OK, 1.0, 1.0, 1),
            {"test_a": CellRun(True, ""), "test_b": CellRun(False, "x" * EXCERPT_CHARS)},
        )
    )
    malformed = _done({**HEADER, "seconds": "1"})
    assert malformed.outcome == JobOutcome(Status.BAD_RESULT)
    for frame in (b"[1]", b"not json", json.dumps({"kind": "other"}).encode(), b"{" * 100_000):
        assert supervisor_said(frame) == Said(), frame[:20]
