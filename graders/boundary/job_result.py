"""What comes back from a job, read as hostile here and handed to the grader typed.

The supervisor's messages (:class:`~graders.boundary.protocol.DoneHeader` and the rest) and the job's result
(:mod:`graders.boundary.wire`) are parsed in this module only: each within a budget, each field of the type it
must have. Past it the grader reads :class:`JobOutcome`, whose :class:`JobResult` holds a :class:`CellRun` per
test cell that ran and a :class:`ProbeRecord` per probe, never a dict read by key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graders.boundary.protocol import KIND_ASK_PROBES, KIND_DONE, UNPLAIN, DoneHeader, Outcome, Status

if TYPE_CHECKING:  # torch: a worker starts before the grader has imported it
    from graders.boundary.wire import Plain

HEADER_BYTES = 4 << 20
HEADER_VALUES = (
    100_000  # JSON values in a header (wire.values_in): a supervisor's honest one holds a few hundred
)
EXCERPT_CHARS = 200  # of a visible test failure: all a report ever shows of text from the sandbox
MAX_CELLS = 10_000


@dataclass(frozen=True)
class CellRun:
    """A graded test cell as the job ran it: its visible tests passed (``ok``), or the error (cut short)."""

    ok: bool
    error: str = ""


@dataclass(frozen=True)
class Contracts:
    """What a probe's calls of the student's functions changed (:mod:`graders.inside.contracts`):
    ``effects``: (call index, function) -> what that call changed; ``varied``: ``"fn(param)"`` -> the kinds of
    value (``non-default``, ``falsy``) some call passed it."""

    effects: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    varied: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, record: dict) -> Contracts:
        """The well-formed entries of a decoded contracts record (others are dropped)."""
        effects = {}
        for entry in record.get("effects", []) if isinstance(record.get("effects"), list) else []:
            if (
                isinstance(entry, list)
                and len(entry) == 3
                and type(entry[0]) is int
                and isinstance(entry[1], str)
                and _strings(entry[2])
            ):
                effects[(entry[0], entry[1])] = list(entry[2])
        raw_varied = record.get("varied")
        varied = (
            {
                name: list(kinds)
                for name, kinds in raw_varied.items()
                if isinstance(name, str) and _strings(kinds)
            }
            if isinstance(raw_varied, dict)
            else {}
        )
        return cls(effects, varied)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


@dataclass(frozen=True)
class ProbeRecord:
    """One probe's observation: the ``value`` it returned (plain data and dense tensors, as the wire carries
    them), or the ``error`` it raised (None: it returned); and what the student's functions changed."""

    value: Plain = None
    error: str | None = None
    contracts: Contracts | None = None

    @classmethod
    def from_wire(cls, record: Any) -> ProbeRecord | None:
        """A decoded record ``{"value"}`` or ``{"error": str}``, each with or without a ``"contracts"`` dict;
        None when it is anything else."""
        if not isinstance(record, dict) or not isinstance(record.get("contracts", {}), dict):
            return None
        contracts = Contracts.from_wire(record["contracts"]) if "contracts" in record else None
        keys = set(record) - {"contracts"}
        if keys == {"value"}:
            return cls(record["value"], None, contracts)
        if keys == {"error"} and isinstance(record["error"], str):
            return cls(None, record["error"], contracts)
        return None


def first_unplain(value: Plain, depth: int = 0) -> str | None:
    """The first marker a probe left for a value it could not carry (an nn.Module, a generator ...): why."""
    if depth > 40:
        return None
    if isinstance(value, dict):
        if set(value) == {UNPLAIN}:
            return str(value[UNPLAIN])
        value = list(value.values())
    if isinstance(value, list | tuple):
        return next((found for v in value if (found := first_unplain(v, depth + 1))), None)
    return None


@dataclass(frozen=True)
class JobResult:
    """A job's answer: each graded test cell that ran, each probe that ran."""

    cells: dict[str, CellRun]
    probes: dict[str, ProbeRecord]


@dataclass
class JobOutcome(Outcome):
    """What came back from one job: its status, costs, isolation notes and its result (None unless it is ok)."""

    result: JobResult | None = None


def read_message(frame: bytes) -> dict[str, Any] | None:
    """A supervisor's JSON message, or None when it is not a small JSON object."""
    from graders.boundary import wire  # torch: a worker starts before the grader has imported it

    if len(frame) > HEADER_BYTES or wire.values_in(frame) > HEADER_VALUES:
        return None
    try:
        message = json.loads(frame)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


@dataclass(frozen=True)
class Done:
    """The supervisor's final header, read: the ``outcome`` it reports (a "bad result" when a field has the wrong
    type) and the test cells as the job claimed them (``cells``: None when they are malformed)."""

    outcome: JobOutcome
    cells: dict[str, CellRun] | None


@dataclass(frozen=True)
class Said:
    """One frame from the supervisor: it asks for the probes, or it is done (``done``); neither: anything else,
    which ends the conversation."""

    asks_for_probes: bool = False
    done: Done | None = None


def supervisor_said(frame: bytes) -> Said:
    """What a frame from the supervisor says."""
    message = read_message(frame)
    if message is None:
        return Said()
    if message.get("kind") == KIND_ASK_PROBES:
        return Said(asks_for_probes=True)
    if message.get("kind") == KIND_DONE:
        return Said(done=Done(outcome_of(message), cell_runs(message.get("cells"))))
    return Said()


def outcome_of(header: dict[str, Any]) -> JobOutcome:
    """The header's fields, each of the type it must have (a wrong one makes the job's status "bad result")."""
    done = DoneHeader.from_message(header)
    if done is None:
        return JobOutcome(Status.BAD_RESULT)
    return JobOutcome(
        done.status, done.seconds, done.cpu_seconds, done.max_rss_mb, done.output_tail, done.isolation
    )


def cell_runs(cells: Any) -> dict[str, CellRun] | None:
    """The test cells' records as the job claimed them (``{"ok": bool, "error": str}`` each, errors cut
    short), or None when they are anything else."""
    if not isinstance(cells, dict) or len(cells) > MAX_CELLS:
        return None
    out = {}
    for key, cell in cells.items():
        if not (
            isinstance(cell, dict) and type(cell.get("ok")) is bool and isinstance(cell.get("error"), str)
        ):
            return None
        out[key] = CellRun(cell["ok"], cell["error"][:EXCERPT_CHARS])
    return out


def job_result(cells: dict[str, CellRun] | None, data: bytes) -> JobResult | None:
    """The job's answer (its test ``cells``, read from the header, and the result frame ``data``) when it is well
    formed and within budget; None otherwise."""
    from graders.boundary import wire

    try:
        result = wire.decode(data)
    except wire.WireError:
        return None
    sent = result.get("probes") if isinstance(result, dict) else None
    if cells is None or not isinstance(sent, dict):
        return None
    probes = {name: ProbeRecord.from_wire(record) for name, record in sent.items()}
    if any(record is None for record in probes.values()):
        return None
    return JobResult(cells, {name: record for name, record in probes.items() if record is not None})


def completed(done: Done, data: bytes) -> JobOutcome:
    """The outcome ``done`` reports, with the job's result (``data``) when it is ok; a malformed result makes it
    a "bad result"."""
    outcome = done.outcome
    if outcome.status == Status.OK:
        outcome.result = job_result(done.cells, data)
        if outcome.result is None:
            outcome.status = Status.BAD_RESULT
    return outcome
