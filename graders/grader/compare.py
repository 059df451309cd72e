"""The trusted comparison: a submission's observation against the reference's, in the grader.

Runs in the grader process on data decoded by :mod:`graders.boundary.wire` (plain values and dense CPU
tensors only); text from the sandbox reaches a verdict only as a known exception name.
"""

from __future__ import annotations

import builtins
import json
import math
from dataclasses import dataclass
from typing import Any

import torch

from graders.boundary.job_result import Contracts, ProbeRecord, first_unplain

KNOWN_EXCEPTIONS = frozenset(
    {n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}
    | {n for n in dir(torch) if n.endswith("Error") and isinstance(getattr(torch, n), type)}
)
SHORT_REPR = 60
#: Default (rtol, atol) per floating dtype: a float64 exercise is held to float64 accuracy (float32
#: accumulation fails it), lower precisions to torch.testing's defaults.
TOLERANCES = {
    torch.float64: (1e-9, 1e-12),
    torch.complex128: (1e-9, 1e-12),
    torch.float32: (1.3e-6, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
}
FLOAT_TOLERANCE = (1e-6, 1e-9)  # Python floats: most come from float32 work (a loss's .item())


def tolerance(dtype: torch.dtype | None, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """The (rtol, atol) a comparison uses: the probe's where it set them, else the dtype's default.

    ``atol=0.0`` compares tails relatively (where numerical stability is the point), down to the dtype's
    smallest normal number: below it (subnormals) two correct formulas may round apart, or to 0.
    """
    default = TOLERANCES.get(dtype, FLOAT_TOLERANCE) if dtype is not None else FLOAT_TOLERANCE
    floor = (
        torch.finfo(dtype).tiny
        if dtype is not None and (dtype.is_floating_point or dtype.is_complex)
        else 0.0
    )
    return (default[0] if rtol is None else rtol, max(floor, default[1] if atol is None else atol))


@dataclass(frozen=True)
class Verdict:
    """Whether an observation matched, and (when it is a list of cases) how many cases differ."""

    ok: bool
    differing: int = 0
    cases: int = 1
    why: str = ""
    detail: str = ""  # for the instructor only: the first differing case, path and values


def exception_name(error: str) -> str:
    """The class name in ``"<Class>: message"`` when it is a builtin or torch exception, else a neutral word.

    The text comes from the sandbox: a student can raise a class of any name, so a name is shown only
    when it is one the grader knows (never a channel for smuggling text into feedback).
    """
    name = error.split(":", 1)[0].strip()
    return name if name in KNOWN_EXCEPTIONS else "an exception"


def same(got: Any, want: Any, rtol: float | None, atol: float | None) -> bool:
    """Structural equality; tensors and floats within tolerance, everything else exact."""
    if type(got) is not type(want) and not (isinstance(got, dict) and isinstance(want, dict)):
        return False
    if isinstance(want, torch.Tensor):
        if got.dtype != want.dtype or got.shape != want.shape:
            return False
        if not want.is_floating_point() and not want.is_complex():
            return bool(torch.equal(got, want))
        tight, loose = tolerance(want.dtype, rtol, atol)
        try:
            torch.testing.assert_close(got, want, equal_nan=True, rtol=tight, atol=loose)
        except AssertionError:
            return False
        return True
    if isinstance(want, float):
        tight, loose = tolerance(None, rtol, atol)
        return math.isclose(got, want, rel_tol=tight, abs_tol=loose) or (math.isnan(got) and math.isnan(want))
    if isinstance(want, (list, tuple)):
        return len(got) == len(want) and all(same(g, w, rtol, atol) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k], rtol, atol) for k in want)
    return got == want


def short_repr(value: Any, at: tuple[int, ...] | None = None) -> str:
    """A value in a few words: a tensor as shape/dtype (and its element ``at``), anything else cut short."""
    if isinstance(value, torch.Tensor):
        shape = "x".join(map(str, value.shape)) or "0-d"
        element = f", [{', '.join(map(str, at))}] = {value[at].item()!r}" if at is not None else ""
        return f"tensor({shape}, {str(value.dtype).removeprefix('torch.')}{element})"
    text = repr(value)
    return text if len(text) <= SHORT_REPR else text[: SHORT_REPR - 3] + "..."


def _first_differing_element(
    got: torch.Tensor, want: torch.Tensor, rtol: float | None, atol: float | None
) -> tuple[int, ...] | None:
    """Index of the first element outside tolerance (else of the largest difference); None when empty."""
    if want.numel() == 0:
        return None
    if not (want.is_floating_point() or want.is_complex()):
        bad = (got != want).nonzero()
        return tuple(int(i) for i in bad[0]) if len(bad) else None
    tight, loose = tolerance(want.dtype, rtol, atol)
    close = torch.isclose(got, want, rtol=tight, atol=loose, equal_nan=True)
    bad = (~close).nonzero()
    if len(bad):
        return tuple(int(i) for i in bad[0])
    flat = int((got.to(torch.complex128) - want.to(torch.complex128)).abs().nan_to_num(0.0).argmax())
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), want.shape))


def _tensor_difference(got: torch.Tensor, want: torch.Tensor, rtol: float | None, atol: float | None) -> str:
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"expected {short_repr(want)}, got {short_repr(got)}"
    at = _first_differing_element(got, want, rtol, atol)
    return f"expected {short_repr(want, at)}, got {short_repr(got, at)}"


def first_difference(
    got: Any, want: Any, rtol: float | None = None, atol: float | None = None, path: str = ""
) -> str | None:
    """Where ``got`` first differs from ``want`` (walking them as :func:`same` does), or None.

    ``'["grads"][2]: expected tensor(3, float32, [1] = 0.5), got tensor(3, float32, [1] = 0.0)'``; the
    path is empty for a top-level difference. Instructor side only: it shows values.
    """
    where = f"{path}: " if path else ""
    if same(got, want, rtol, atol):
        return None
    if type(got) is not type(want) and not (isinstance(got, dict) and isinstance(want, dict)):
        return f"{where}expected {type(want).__name__} {short_repr(want)}, got {type(got).__name__} {short_repr(got)}"
    if isinstance(want, torch.Tensor):
        return f"{where}{_tensor_difference(got, want, rtol, atol)}"
    if isinstance(want, (list, tuple)):
        if len(got) != len(want):
            return f"{where}expected {len(want)} items, got {len(got)}"
        return next(
            filter(
                None,
                (
                    first_difference(g, w, rtol, atol, f"{path}[{i}]")
                    for i, (g, w) in enumerate(zip(got, want, strict=True))
                ),
            ),
            None,
        )
    if isinstance(want, dict):
        if got.keys() != want.keys():
            return f"{where}expected keys {sorted(want)}, got {sorted(got)}"
        return next(
            filter(
                None,
                (first_difference(got[k], want[k], rtol, atol, f"{path}[{json.dumps(k)}]") for k in want),
            ),
            None,
        )
    return f"{where}expected {short_repr(want)}, got {short_repr(got)}"


def first_differing_case(observed: list, expected: list, rtol: float | None, atol: float | None) -> str:
    """``case 3 → ["grads"][2]: expected ..., got ...`` for the first case of a list that differs."""
    for index, (got, want) in enumerate(zip(observed, expected, strict=True)):
        found = first_difference(got, want, rtol, atol)
        if found:
            return f"case {index} → {found}" if found.startswith("[") else f"case {index}: {found}"
    return ""


def compare(
    got: ProbeRecord, want: ProbeRecord, rtol: float | None = None, atol: float | None = None
) -> Verdict:
    """Compare a submission's probe record with the reference's (each a value or the error it raised)."""
    if want.error is not None:
        return Verdict(False, why=f"the reference itself failed ({want.error}): a broken probe")
    unplain = first_unplain(want.value)
    if unplain:
        return Verdict(
            False,
            why=f"the reference returned what the grader cannot compare ({unplain}): "
            "a broken probe (return tensors, numbers, strings or lists/dicts of them)",
        )
    if got.error is not None:
        return Verdict(False, why=f"raised {exception_name(got.error)}")
    effects = _effects_differ(got.contracts, want.contracts)
    if effects:
        return Verdict(False, why="side effects differ from the reference's", detail=effects)
    observed, expected = got.value, want.value
    if isinstance(expected, list) and isinstance(observed, list) and len(observed) == len(expected):
        differing = sum(not same(g, w, rtol, atol) for g, w in zip(observed, expected, strict=True))
        why = f"{differing} of {len(expected)} cases differ from the reference" if differing else ""
        detail = first_differing_case(observed, expected, rtol, atol) if differing else ""
        return Verdict(differing == 0, differing, len(expected), why, detail)
    ok = same(observed, expected, rtol, atol)
    return Verdict(
        ok,
        0 if ok else 1,
        1,
        "" if ok else "differs from the reference",
        "" if ok else first_difference(observed, expected, rtol, atol) or "",
    )


def _effects_differ(got: Contracts | None, want: Contracts | None) -> str:
    """The first call whose side effects (graders.inside.contracts) differ from the reference's, in words; empty
    when they agree (or the reference recorded none: an old result, a probe without contracts)."""
    if want is None:
        return ""
    mine = got.effects if got else {}
    theirs = want.effects
    for key in sorted(set(mine) | set(theirs), key=lambda k: (k[0], str(k[1]))):
        if sorted(mine.get(key, [])) != sorted(theirs.get(key, [])):
            return (
                f"call {key[0]} of {key[1]}: changed {sorted(mine.get(key, [])) or 'nothing'}, "
                f"the reference {sorted(theirs.get(key, [])) or 'nothing'}"
            )
    return ""


def points_for(verdict: Verdict, points: float, step: float | None) -> float:
    """A cell's points: all or nothing without ``step``; else the matched share, rounded down to ``step``."""
    if verdict.ok:
        return points
    if step is None or verdict.cases <= 1 or verdict.differing >= verdict.cases:
        return 0.0
    share = (verdict.cases - verdict.differing) / verdict.cases
    return math.floor(share * points / step + 1e-9) * step
