"""Predict, then run: the ungraded self-checks that follow a lesson's ``exercise`` cells.

An exercise cell (tagged ``exercise``) asks the student for a prediction or a small function and
leaves ``...`` as the answer. The next cell (tagged ``self-check``) runs the experiment that
settles it and hands both to :func:`check` or :func:`check_function`, which print one verdict:
right, not yet (with what the experiment says and why), or not answered yet. Nothing raises: a
lesson runs top to bottom whatever the student typed, and the lab is where grading happens.

    # exercise cell
    prediction = ...  # True or False: does x.t() share x's storage?
    # self-check cell
    exercises.check("shares storage", prediction, x.t().untyped_storage().data_ptr() == x.data_ptr(),
                    why="t() only swaps strides; the storage is the same")
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

Case = tuple[tuple[Any, ...], Any]  # (arguments, expected result)


class Outcome:
    """Whether an answer was right: truthy or not, and shown as nothing (the verdict was printed)."""

    def __init__(self, right: bool) -> None:
        self.right = right

    def __bool__(self) -> bool:
        return self.right

    def __repr__(self) -> str:
        return f"Outcome(right={self.right})"

    def _ipython_display_(self) -> None:
        """The last line of a self-check cell: IPython shows nothing under the printed verdict."""


def unanswered(answer: Any) -> bool:
    """True while the exercise still holds its placeholder ``...``."""
    return answer is Ellipsis


def same(answer: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Whether an answer matches the experiment: tensors by value/shape/dtype, numbers with tolerance."""
    if isinstance(expected, torch.Tensor):
        return (isinstance(answer, torch.Tensor) and answer.shape == expected.shape
                and answer.dtype == expected.dtype and torch.allclose(answer, expected, rtol, atol, equal_nan=True))
    if isinstance(expected, float) and isinstance(answer, int | float) and not isinstance(answer, bool):
        return math.isclose(answer, expected, rel_tol=rtol, abs_tol=atol)
    if isinstance(expected, tuple | list) and isinstance(answer, tuple | list):
        return len(answer) == len(expected) and all(same(a, e, rtol, atol) for a, e in zip(answer, expected, strict=True))
    if isinstance(expected, bool) or isinstance(answer, bool):
        return isinstance(answer, bool) and isinstance(expected, bool) and answer == expected
    try:
        return bool(answer == expected)
    except (RuntimeError, TypeError, ValueError):
        return False


def check(name: str, answer: Any, expected: Any, why: str) -> Outcome:
    """Print whether ``answer`` matches what the experiment found (``expected``), and why; truthy if right."""
    if unanswered(answer):
        print(f"[{name}] not answered yet: replace the ... in the exercise cell, then run this cell again.")
        return Outcome(False)
    if same(answer, expected):
        print(f"[{name}] right: {why}")
        return Outcome(True)
    print(f"[{name}] not yet: you said {answer!r}, the experiment says {expected!r}. {why}")
    return Outcome(False)


def check_function(name: str, fn: Callable[..., Any], cases: Sequence[Case], why: str) -> Outcome:
    """Run the student's ``fn`` on each ``(args, expected)`` case and print the first miss, or right."""
    for args, expected in cases:
        try:
            got = fn(*args)
        except NotImplementedError:
            print(f"[{name}] not answered yet: write the function in the exercise cell, then run this cell.")
            return Outcome(False)
        except Exception as err:  # noqa: BLE001 - the student's code: report it, never stop the lesson
            print(f"[{name}] not yet: {fn.__name__}{_args(args)} raised {type(err).__name__}: {err}. {why}")
            return Outcome(False)
        if not same(got, expected):
            print(f"[{name}] not yet: {fn.__name__}{_args(args)} returned {got!r}, expected {expected!r}. {why}")
            return Outcome(False)
    print(f"[{name}] right on all {len(cases)} cases: {why}")
    return Outcome(True)


def _args(args: tuple[Any, ...]) -> str:
    shown = ", ".join(_short(a) for a in args)
    return f"({shown})"


def _short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor(shape={tuple(value.shape)}, dtype={value.dtype})"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
