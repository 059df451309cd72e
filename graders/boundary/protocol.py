"""The grader <-> sandbox protocol: every message that crosses the boundary, typed, in one place.

Standard library only: the grader (:mod:`graders.grader.sandbox.worker`) and the supervisor inside the sandbox
(:mod:`graders.inside.zygote`) both import it. Each message is one frame (:mod:`zygote.frames`: an 8-byte
length, then JSON), in this order::

    zygote -> grader       Ready            once, when the warm imports are done
    grader -> supervisor   JobSpec          cells, limits, environment (no probes, no salt)
    supervisor -> grader   ASK_PROBES       once the notebook has run
    grader -> supervisor   ProbeRequest     the probes, their salt
    supervisor -> grader   DoneHeader       status, costs, isolation notes, test cells
    supervisor -> grader   the result       :mod:`graders.boundary.wire` (numbers, short strings, tensors)

What the grader sends is its own; what comes back is read as hostile: :meth:`DoneHeader.from_message`
takes only fields of the type they must have, and a status the supervisor may report.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

KIND_ASK_PROBES = "probes?"
KIND_DONE = "done"
ASK_PROBES = json.dumps({"kind": KIND_ASK_PROBES}).encode()
ISOLATION_NOTE_CHARS = 300  # of one isolation note, as the grader keeps it
OUTPUT_TAIL_CHARS = 4096  # of a job's output, as the grader keeps it
UNPLAIN = (
    "__unplain__"  # a value a probe could not make plain travels as {UNPLAIN: why}, unequal to any value
)


class Status(str, Enum):
    """How a job ended; a ``str`` (``Status.OK == "ok"``), with :attr:`why`, the line a report shows."""

    why: str

    def __new__(cls, value: str, why: str = "") -> Status:
        member = str.__new__(cls, value)
        member._value_ = value
        member.why = why
        return member

    def __str__(self) -> str:
        return str(self.value)

    OK = "ok", "graded"
    TIMEOUT = "timeout", "timed out"
    CRASHED = "crashed", "the process ended before grading finished"
    OUTPUT_LIMIT = "output limit", "printed more than the output limit"
    RESULT_TOO_LARGE = "result too large", "result over the size limit"
    BAD_RESULT = "bad result", "sent back something other than a grading result (tampering?)"
    WORKER_DIED = "worker died", "the sandbox died while grading it"
    GRADER_ERROR = "grader error", "the grader failed on it"
    MEMORY_LIMIT = "memory limit", "used more memory than the limit (all its processes together)"
    CPU_LIMIT = "cpu limit", "used more CPU time than the limit (all its processes together)"


# What the supervisor inside the sandbox may report; the others are the grader's own findings.
SUPERVISOR_STATUSES = frozenset(
    {
        Status.OK,
        Status.TIMEOUT,
        Status.CRASHED,
        Status.OUTPUT_LIMIT,
        Status.RESULT_TOO_LARGE,
        Status.BAD_RESULT,
    }
)


@dataclass(frozen=True)
class Cell:
    """A code cell to execute: ``key`` names it in the result (grade_id, or ``cell<N>``)."""

    key: str
    source: str
    graded: bool = False


@dataclass
class Job:
    """What the grader asks the sandbox to run: the notebook's cells in order, then the lab's probes (sent as a
    :class:`JobSpec`, then a :class:`ProbeRequest`)."""

    cells: list[Cell]
    probes_source: str = ""
    probes_file: str = "probes.py"
    salt: int = 0
    env: dict[str, str] = field(default_factory=dict)
    traceback: bool = False  # probe failures carry their last frames (reference runs of the source only)
    probes_only: list[str] = field(default_factory=list)  # grade_ids whose probes run; empty: all of them


@dataclass(frozen=True)
class Ready:
    """The zygote has imported what jobs need (``warm_failed``: the modules that did not import)."""

    warm_failed: list[str] = field(default_factory=list)
    threads: int = 1

    def to_frame(self) -> bytes:
        """The frame's bytes."""
        return json.dumps({"ready": True, **asdict(self)}).encode()


@dataclass(frozen=True)
class Limits:
    """Per-submission resource limits."""

    wall_seconds: float = 300.0
    cpu_seconds: int = 600
    memory_bytes: int = 4 << 30  # address space beyond what the warm process already maps
    processes: int = 128  # processes and threads of the job's uid
    output_bytes: int = 2 << 20  # stdout + stderr
    result_bytes: int = 64 << 20
    file_bytes: int = 64 << 20  # largest file the job may write
    tmp_bytes: int = 512 << 20  # its private /tmp

    @property
    def cpu_backstop_seconds(self) -> int:
        """Each process's own CPU rlimit: above the job's budget, so that the watchdog (which sums all
        the job's processes) ends a spinning job first, as "cpu limit", not as a process killed by SIGXCPU."""
        return self.cpu_seconds + max(5, self.cpu_seconds // 10)


@dataclass(frozen=True)
class JobSpec:
    """What the supervisor needs to run a job's notebook: never its probes nor its salt."""

    cells: list[Cell]
    limits: Limits
    uid: int
    uid_optional: bool  # the job may run under the grader's uid when a separate one fails (never labs grade)
    env: dict[str, str]  # the job's whole environment
    base_processes: int = 0  # tasks the grader's uid already runs (they count against RLIMIT_NPROC)
    keep: list[str] = field(default_factory=list)  # folders under /tmp the job's fresh /tmp keeps bound

    def to_frame(self) -> bytes:
        """The frame's bytes."""
        return json.dumps(asdict(self)).encode()

    @classmethod
    def from_frame(cls, frame: bytes) -> JobSpec:
        """Inverse of :meth:`to_frame` (the grader's own message)."""
        data = json.loads(frame)
        return cls(
            [Cell(**c) for c in data["cells"]],
            Limits(**data["limits"]),
            int(data["uid"]),
            bool(data["uid_optional"]),
            dict(data["env"]),
            int(data.get("base_processes", 0)),
            list(data.get("keep", [])),
        )


@dataclass(frozen=True)
class ProbeRequest:
    """The probes the grader sends once the notebook has run (an empty ``source``: none)."""

    source: str = ""
    file: str = "probes.py"
    salt: int = 0
    traceback: bool = False  # failures carry their last frames (reference runs of the source only)
    only: list[str] = field(default_factory=list)  # grade_ids whose probes run; empty: all of them

    def to_frame(self) -> bytes:
        """The frame's bytes."""
        return json.dumps(asdict(self)).encode()

    @classmethod
    def from_frame(cls, frame: bytes) -> ProbeRequest:
        """Inverse of :meth:`to_frame`; an empty frame is a request of no probes."""
        data = json.loads(frame or b"{}")
        return cls(
            str(data.get("source", "")),
            str(data.get("file", "")),
            int(data.get("salt", 0)),
            bool(data.get("traceback", False)),
            list(data.get("only", [])),
        )


@dataclass
class Outcome:
    """How a job ended and what it cost: what the supervisor reports, and what the grader keeps of it."""

    status: Status
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    max_rss_mb: int = 0
    output_tail: str = ""
    isolation: list[str] = field(default_factory=list)


@dataclass
class DoneHeader(Outcome):
    """The supervisor's account of a job, sent before its result.

    ``cells``: per graded test cell ``{"ok", "error"}`` as the job claimed it, sent as is: the grader reads it
    only through :func:`graders.boundary.job_result.cell_runs`; ``exit_code`` and ``output_bytes`` are for logs only.
    """

    cells: dict[str, Any] = field(default_factory=dict)
    exit_code: int = 0
    output_bytes: int = 0

    def to_frame(self) -> bytes:
        """The frame's bytes."""
        return json.dumps({"kind": KIND_DONE, **asdict(self)}).encode()

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> DoneHeader | None:
        """The header in a supervisor's decoded message, or None when a field has the wrong type or the
        status is not one a supervisor may report (the job is then a ``bad result``). Read as hostile:
        text is cut to what the grader keeps, isolation notes that are not text are dropped."""
        values: dict[str, Any] = {}
        for name, kind in HEADER_FIELDS.items():
            value = message.get(name)
            if kind is float and type(value) is int:
                value = float(value)
            if type(value) is not kind:
                return None
            values[name] = value
        status = status_named(values.pop("status"))
        if status is None or status not in SUPERVISOR_STATUSES:
            return None
        notes = message.get("isolation")
        isolation = (
            [n[:ISOLATION_NOTE_CHARS] for n in notes if isinstance(n, str)] if isinstance(notes, list) else []
        )
        exit_code, output_bytes = message.get("exit_code"), message.get("output_bytes")
        return cls(
            status,
            values["seconds"],
            values["cpu_seconds"],
            values["max_rss_mb"],
            values["output_tail"][-OUTPUT_TAIL_CHARS:],
            isolation,
            cells if isinstance(cells := message.get("cells"), dict) else {},
            exit_code if type(exit_code) is int else 0,
            output_bytes if type(output_bytes) is int else 0,
        )


HEADER_FIELDS: dict[str, type] = {
    "status": str,
    "seconds": float,
    "cpu_seconds": float,
    "max_rss_mb": int,
    "output_tail": str,
}


def status_named(text: str) -> Status | None:
    """The status whose value is ``text``, or None."""
    try:
        return Status(text)
    except ValueError:
        return None
