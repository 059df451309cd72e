"""Probes: instructor code that drives a submission on inputs drawn anew for each grading run.

A lab's probe file (``course/<chapter>/probes/<lab>.py``) holds one probe per graded test cell::

    @probe("test_storage_index")
    def storage_index(ns: Namespace, draw: Draw) -> Observation:
        '''storage_index on random shapes, strides and offsets'''
        cases = [random_layout(draw) for _ in range(50)]
        return [ns["storage_index"](*case) for case in cases]

A probe runs inside the sandbox twice: after the student's notebook and after the instructor's
source. The trusted grader compares the two observations. So a probe only *drives* the code under
test and returns what it produced (tensors, numbers, strings, None, and lists, tuples and dicts of
them). It never computes the expected answer nor compares anything: both would run next to student
code, which can rewrite them.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from graders.boundary.protocol import UNPLAIN
from graders.boundary.wire import MAX_STRING, PLAIN_DTYPES

Namespace = MutableMapping[
    str, Any
]  # the notebook's globals, or graders.inside.contracts' watched view of them
Observation = Any
ProbeFn = Callable[[Namespace, "Draw"], Observation]

RAISED = "__raised__"
TRACE_LINE = 180  # a frame of a reference probe's traceback: 3 of them and the message stay under MAX_STRING


@dataclass(frozen=True)
class Probe:
    """One graded test cell's probe and how closely floating-point results must agree."""

    grade_id: str
    fn: ProbeFn
    rtol: float | None = None
    atol: float | None = None
    partial_step: float | None = None  # None: all or nothing; else points per matched case, in steps of this
    forbid: tuple[
        str, ...
    ] = ()  # names the exercise's solution must not mention (graders.grader.vetting), checked before it runs
    iterative: bool = (
        False  # no function of the solution may call itself (graders.grader.vetting), checked before it runs
    )
    contracts: bool = True  # the notebook's functions reach the probe watched (graders.inside.contracts)
    clauses: tuple[tuple[str, str], ...] = ()  # (clause of the exercise's statement, the case that checks it)

    @property
    def description(self) -> str:
        """First paragraph of the probe's docstring, on one line: what it checks, shown to students."""
        doc = (self.fn.__doc__ or self.fn.__name__).strip()
        return " ".join(line.strip() for line in doc.split("\n\n")[0].splitlines())


_registry: dict[str, Probe] = {}


def probe(
    grade_id: str,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    partial_step: float | None = None,
    forbid: tuple[str, ...] = (),
    iterative: bool = False,
    contracts: bool = True,
    clauses: dict[str, str] | None = None,
) -> Callable[[ProbeFn], ProbeFn]:
    """Register ``fn`` as the probe of the graded test cell ``grade_id``.

    ``forbid``: identifiers (``"transpose"``, ``"broadcast_shapes"``, ``"torch"``) the exercise's solution,
    and the solution-cell code it uses, must not mention; the grader reads that before anything runs. State
    the same rule in the probe's recorder (:func:`graders.inside.rules.forbidden`), which sees every spelling.
    ``iterative``: no function of the solution may call itself, even through others (and
    ``forbidden(recursion=True)`` where it runs). ``contracts=False``: the probe gets the notebook's
    functions unwatched (one that ships them to other processes by source).

    ``clauses``: each clause of the exercise's statement (what to return, in place or not, modes, shapes,
    dtypes, what must stay unchanged) and the case that checks it: text of the probe's own code (``"draw.sizes(0"``,
    ``"eval()"``) or ``"contracts"`` (side effects, compared by :mod:`graders.inside.contracts`); `labs lint` fails on a
    probe that lists none, or names a case its code does not have.

    By default a cell earns its points only when every case matches. ``partial_step=1`` gives points in
    proportion to the matched cases, rounded down to whole points (0.5: to half points), so a cell with
    any differing case never earns full marks.
    """
    if partial_step is not None and partial_step <= 0:
        raise ValueError(f"probe {grade_id}: partial_step must be positive, got {partial_step}")

    def register(fn: ProbeFn) -> ProbeFn:
        _registry[grade_id] = Probe(
            grade_id,
            fn,
            rtol,
            atol,
            partial_step,
            tuple(forbid),
            iterative,
            contracts,
            tuple((clauses or {}).items()),
        )
        return fn

    return register


class Draw:
    """Random inputs for one probe: seeded from the grading run's salt and the probe's grade_id."""

    def __init__(self, salt: int, grade_id: str) -> None:
        digest = hashlib.sha256(f"{salt}:{grade_id}".encode()).digest()
        self.seed = int.from_bytes(digest[:8], "little") >> 1
        self.random = random.Random(self.seed)
        self.gen = torch.Generator().manual_seed(self.seed)

    def randn(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Standard-normal tensor of ``shape`` from this draw's generator."""
        return torch.randn(*shape, generator=self.gen, dtype=dtype)

    def randint(self, low: int, high: int) -> int:
        """An int in ``[low, high]`` (both ends included)."""
        return self.random.randint(low, high)

    def choice(self, options: list) -> Any:
        """One of ``options``."""
        return self.random.choice(options)

    def sizes(self, low: int, high: int, count: int) -> list[int]:
        """``count`` ints in ``[low, high]`` (more when the edges need it): the domain's edges first, by
        construction (``low``, ``low + 1``, ``high - 1``, ``high``: both ends and both parities at each), then
        draws. A mistake that shows only at one end or one parity of a size loses under every salt."""
        if low > high:
            raise ValueError(f"sizes: low {low} > high {high}")
        found = list(dict.fromkeys(edges(low, high)))
        found += [self.randint(low, high) for _ in range(count - len(found))]
        return found


def edges(low: int, high: int) -> list[int]:
    """The edge values of the int range ``[low, high]``: each end and its neighbour inside the range."""
    return [v for v in (low, low + 1, high - 1, high) if low <= v <= high]


def outcome(fn: Callable, *args: Any, **kwargs: Any) -> Observation:
    """``fn(*args, **kwargs)``, or ``{"__raised__": "<exception type>"}`` when it raises."""
    try:
        return fn(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - the exception type is the observation
        return {RAISED: type(err).__name__}


def to_plain(value: Any, depth: int = 0) -> Observation:
    """``value`` as the plain data :mod:`graders.boundary.wire` carries out of the sandbox: None, bools, ints, floats,
    strings cut at ``MAX_STRING``, dense CPU tensors of ``PLAIN_DTYPES`` (subclasses and views made plain
    copies), ``torch.Size`` as a tuple, and lists, tuples and string-keyed dicts of them. Anything else, or
    nesting past 20 levels, becomes an ``{UNPLAIN: why}`` marker that compares unequal to a real value."""
    if depth > 20:
        return {UNPLAIN: "nested too deep"}
    if type(value) is int and abs(value) >= 10**38:
        return {UNPLAIN: "int too large"}
    if value is None or type(value) in (bool, int, float):
        return value
    if type(value) is str:
        return value[:MAX_STRING]
    if isinstance(value, torch.Tensor) and (
        value.layout != torch.strided
        or value.is_nested
        or value.is_quantized
        or value.is_meta
        or value.dtype not in PLAIN_DTYPES
    ):
        return {UNPLAIN: f"tensor ({value.layout}, {value.dtype})"}
    if isinstance(value, torch.Tensor):
        plain = (
            torch.Tensor._make_subclass(torch.Tensor, value.detach().cpu())
            if type(value) is not torch.Tensor
            else value.detach().cpu()
        )
        return plain.clone().contiguous()
    if type(value) in (list, tuple):
        return type(value)(to_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return {str(k): to_plain(v, depth + 1) for k, v in value.items()}
    if type(value) in (torch.Size,):
        return tuple(int(v) for v in value)
    return {UNPLAIN: type(value).__name__}


def load_probes(source: str, filename: str) -> dict[str, Probe]:
    """Run a probe file's source and return its probes by grade_id."""
    _registry.clear()
    code = compile(source, filename, "exec")
    exec(code, {"__name__": "lab_probes", "__file__": filename})  # instructor code, trusted
    found = dict(_registry)
    _registry.clear()
    return found


def seed_globals(seed: int) -> None:
    """Seed the global generators a probe's code under test may draw from."""
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass


def run_probe(found: Probe, ns: Namespace, salt: int, with_trace: bool = False) -> dict[str, Observation]:
    """``{"value": observation, "contracts": record}`` or ``{"error": "<type>: <message>", ...}`` for one
    probe; ``with_trace`` appends the last frames of the traceback, a line each (reference runs: the
    instructor's own code). The record is what the notebook's functions changed, call by call
    (:mod:`graders.inside.contracts`)."""
    from graders.inside.contracts import Record, Watched

    draw = Draw(salt, found.grade_id)
    seed_globals(draw.seed)
    record = Record()
    seen = Watched(ns, record) if found.contracts else ns
    try:
        return {"value": to_plain(found.fn(seen, draw)), "contracts": record.plain()}
    except Exception as err:  # noqa: BLE001 - any failure of the code under test is a result
        error = f"{type(err).__name__}: {str(err)[:300]}"
        return {"error": f"{error}\n{last_frames(err)}" if with_trace else error, "contracts": record.plain()}


def last_frames(err: BaseException, frames: int = 3) -> str:
    """The innermost ``frames`` of ``err``'s traceback, one ``file:line in function: code`` line each."""
    import traceback

    inside_probe = err.__traceback__.tb_next if err.__traceback__ else None  # skip run_probe's own frame
    found = traceback.extract_tb(inside_probe)[-frames:]
    lines = [f"{Path(f.filename).name}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in found]
    return "\n".join(line[:TRACE_LINE] for line in lines)
