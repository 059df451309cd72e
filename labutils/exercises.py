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

import enum
import hashlib
import json
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import torch

Case = tuple[tuple[Any, ...], Any]  # (arguments, expected result)
# `labs run --answer-leaks` names a file here: each check appends its answer's terms, for labs/run/leaks.py.
ANSWERS_FILE = "LABS_ANSWERS"
MIN_TERM = 3


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
        return (
            isinstance(answer, torch.Tensor)
            and answer.shape == expected.shape
            and answer.dtype == expected.dtype
            and torch.allclose(answer, expected, rtol, atol, equal_nan=True)
        )
    if isinstance(expected, float) and isinstance(answer, int | float) and not isinstance(answer, bool):
        return math.isclose(answer, expected, rel_tol=rtol, abs_tol=atol)
    if isinstance(expected, tuple | list) and isinstance(answer, tuple | list):
        return len(answer) == len(expected) and all(
            same(a, e, rtol, atol) for a, e in zip(answer, expected, strict=True)
        )
    if isinstance(expected, bool) or isinstance(answer, bool):
        return isinstance(answer, bool) and isinstance(expected, bool) and answer == expected
    try:
        return bool(answer == expected)
    except (RuntimeError, TypeError, ValueError):
        return False


def answer_terms(value: Any) -> list[str]:
    """What of an answer a page could give away: its strings of MIN_TERM+ characters and its names (a class
    or function by ``__name__``, a dtype as ``float16``, an enum member by name), through lists, tuples, sets
    and a dict's values (its keys name what is asked about). Numbers and booleans give nothing: a page is
    full of them."""
    if isinstance(value, str):
        return [value.strip()] if len(value.strip()) >= MIN_TERM else []
    if isinstance(value, dict):  # the keys name what is asked about (the prompt's items), the values answer
        return answer_terms(list(value.values()))
    if isinstance(value, list | tuple | set | frozenset):
        return [term for item in value for term in answer_terms(item)]
    if isinstance(value, enum.Enum):
        return answer_terms(value.name)
    if isinstance(value, torch.dtype | torch.device):
        return answer_terms(str(value).removeprefix("torch."))
    name = getattr(value, "__name__", None) if callable(value) or isinstance(value, type(os)) else None
    return answer_terms(name) if isinstance(name, str) else []


def cell_key(source: str) -> str:
    """What identifies a cell's source in the answers file and in the executed notebook."""
    return hashlib.sha256(source.strip().encode()).hexdigest()[:16]


def record_answer(name: str, expected: Any) -> None:
    """Append the answer's terms to the file ``$LABS_ANSWERS`` names, with the key of the running cell's
    source (only under `labs run --answer-leaks`, in IPython; nothing otherwise)."""
    path = os.environ.get(ANSWERS_FILE)
    if not path:
        return
    from IPython import get_ipython  # a dependency of the student's set

    shell = get_ipython()
    if shell is None:
        return
    history = getattr(shell, "history_manager", None)
    running = history.input_hist_raw[-1] if history is not None and history.input_hist_raw else ""
    line = {"cell": cell_key(running), "name": name, "terms": sorted(set(answer_terms(expected)))}
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def check(name: str, answer: Any, expected: Any, why: str) -> Outcome:
    """Print whether ``answer`` matches what the experiment found (``expected``), and why; truthy if right."""
    record_answer(name, expected)
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
    record_answer(name, [expected for _, expected in cases])
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
            print(
                f"[{name}] not yet: {fn.__name__}{_args(args)} returned {got!r}, expected {expected!r}. {why}"
            )
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
