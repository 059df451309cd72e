"""Contracts every probe gets without writing them: what a call of the student's function changed.

A probe calls the student's functions through :class:`Watched`, the notebook namespace whose functions
come back wrapped. Each call records its side effects: which of its arguments it changed (a tensor's
values, ``requires_grad`` or ``.grad``; a module's train/eval mode, parameters, their ``.grad``, which
parameter objects it holds, and its buffers; a list's, tuple's or dict's items, and what changed of each of
them) and which global state it left changed (grad mode, inference mode, anomaly mode, default
dtype and device, float32 matmul precision, deterministic algorithms, cuDNN flags, CPU and CUDA autocast,
and the torch, NumPy and ``random`` generators). The record travels back beside the probe's observation, and
the grader compares it with the reference's, call by call, like any observation: nothing here knows what is
right.

So "leave ``x`` as you found it", "leave anomaly mode as you found it", "restore the caller's RNG" and
"in place" need no code in the probe: a submission that mutates what the reference leaves alone (or
leaves alone what the reference changes in place) differs from it. The same wrapper notes, per
parameter with a default, whether a call passed a value other than the default and a falsy one;
``labs check`` names the parameters a probe never varies.
"""

from __future__ import annotations

import functools
import inspect
import random
import types
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import torch

MAX_CALLS_RECORDED = 200  # calls with effects kept per probe; more only adds to the count


def _rng_states() -> tuple:
    """The torch, NumPy and ``random`` generators' states, comparable with ``==`` (NumPy's whole state: a
    draw moves its position long before it changes its key)."""
    try:
        import numpy

        state = numpy.random.get_state(legacy=False)
        numpy_state: tuple = (
            state["state"]["key"].tobytes(),
            state["state"]["pos"],
            state["has_gauss"],
            state["gauss"],
        )
    except ImportError:
        numpy_state = ()
    return torch.get_rng_state().numpy().tobytes(), numpy_state, hash(random.getstate())


# Global state that changes what later code computes: a call must leave each as it found it (or change it as
# the reference does). Performance knobs that leave results alone (thread counts) are not here.
GLOBALS: dict[str, Callable[[], Any]] = {
    "grad mode": torch.is_grad_enabled,
    "inference mode": torch.is_inference_mode_enabled,
    "anomaly mode": lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
    "default dtype": torch.get_default_dtype,
    "default device": lambda: str(torch.get_default_device()),
    "float32 matmul precision": torch.get_float32_matmul_precision,
    "deterministic algorithms": lambda: (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    ),
    "cudnn flags": lambda: (
        torch.backends.cudnn.enabled,
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.deterministic,
    ),
    "cpu autocast": lambda: (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")),
    "cuda autocast": lambda: (torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")),
    "random generators": _rng_states,
}


def _tensor_facts(t: torch.Tensor) -> tuple:
    grad = t.grad if t.is_leaf else None
    return (t.detach().clone(), t.requires_grad, None if grad is None else grad.detach().clone())


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (
        a.shape == b.shape
        and a.dtype == b.dtype
        and bool(
            torch.equal(a, b)
            or (
                a.is_floating_point()
                and torch.equal(a.nan_to_num(), b.nan_to_num())
                and torch.equal(a.isnan(), b.isnan())
            )
        )
    )


def _facts(value: Any, depth: int = 0) -> Any:
    """What can change of an argument, as values to compare after the call: a tensor's values,
    ``requires_grad`` and ``.grad``; a module's mode, parameters (values, ``.grad``, which objects) and
    buffers; a list's, tuple's or dict's items (which objects) and, one level down, what can change of each."""
    if isinstance(value, torch.Tensor):
        return ("tensor", *_tensor_facts(value))
    if isinstance(value, torch.nn.Module):
        params = list(value.named_parameters())
        return (
            "module",
            value.training,
            [p.detach().clone() for _, p in params],
            [None if p.grad is None else p.grad.detach().clone() for _, p in params],
            [(name, id(p)) for name, p in params],
            [b.detach().clone() for b in value.buffers()],
        )
    if type(value) in (list, tuple, dict):
        keys, items = _items(value)
        return (
            type(value).__name__,
            keys,
            items,
            [_facts(v, depth + 1) if depth == 0 else None for v in items],
        )
    return None


def _items(value: list | tuple | dict) -> tuple[list, list]:
    """A container's keys (its indices for a list or tuple) and items."""
    return (
        (list(value), list(value.values()))
        if isinstance(value, dict)
        else (list(range(len(value))), list(value))
    )


def _same_tensors(old: list, new: list) -> bool:
    return len(old) == len(new) and all(
        (a is None) == (b is None) and (a is None or _same_tensor(a, b))
        for a, b in zip(old, new, strict=True)
    )


def _changes(before: Any, value: Any) -> list[str]:
    """What changed of an argument since ``before`` (its :func:`_facts`)."""
    if before is None:
        return []
    kind, *old = before
    if kind == "tensor":
        data, requires_grad, grad = old
        new_data, new_requires_grad, new_grad = _tensor_facts(value)
        return [
            what
            for what, changed in (
                ("values", not _same_tensor(data, new_data)),
                ("requires_grad", requires_grad != new_requires_grad),
                (
                    ".grad",
                    (grad is None) != (new_grad is None)
                    or (grad is not None and not _same_tensor(grad, new_grad)),
                ),
            )
            if changed
        ]
    if kind == "module":
        training, params, grads, identities, buffers = old
        now = list(value.named_parameters())
        return [
            what
            for what, changed in (
                ("train/eval mode", training != value.training),
                ("parameters", not _same_tensors(params, [p.detach() for _, p in now])),
                (
                    "parameters' .grad",
                    not _same_tensors(grads, [None if p.grad is None else p.grad.detach() for _, p in now]),
                ),
                ("which parameter objects", identities != [(name, id(p)) for name, p in now]),
                ("buffers", not _same_tensors(buffers, [b.detach() for b in value.buffers()])),
            )
            if changed
        ]
    keys_before, items_before, inner = old
    keys, items = _items(value)
    if keys != keys_before or any(a is not b for a, b in zip(items_before, items, strict=True)):
        return ["items"]
    return [
        f"item {key}: {what}"
        for key, facts, item in zip(keys, inner, items, strict=True)
        for what in _changes(facts, item)
    ]


@dataclass
class Record:
    """Side effects and parameter coverage of every call one probe made."""

    effects: list[list] = field(
        default_factory=list
    )  # [call index, name, [what changed ...]] per call with effects
    calls: int = 0
    varied: dict[str, set[str]] = field(default_factory=dict)  # "fn(param)" -> {"non-default", "falsy"}

    def plain(self) -> dict[str, Any]:
        """The record as wire-safe data: effects for the comparison, coverage for ``labs check``."""
        return {
            "effects": self.effects[:MAX_CALLS_RECORDED],
            "calls": self.calls,
            "varied": {k: sorted(v) for k, v in sorted(self.varied.items())},
        }


def _note_coverage(
    record: Record, name: str, signature: inspect.Signature | None, args: tuple, kwargs: dict
) -> None:
    if signature is None:
        return
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return
    for param in signature.parameters.values():
        if param.default is inspect.Parameter.empty:
            continue
        seen = record.varied.setdefault(f"{name}({param.name})", set())
        if param.name in bound.arguments:
            value = bound.arguments[param.name]
            if value is not param.default and not _equal(value, param.default):
                seen.add("non-default")
            if _falsy(value):
                seen.add("falsy")


def _equal(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - a tensor compared with a default: not equal
        return False


def _falsy(value: Any) -> bool:
    try:
        return not value
    except Exception:  # noqa: BLE001 - a tensor of several elements has no truth value
        return False


def watch(fn: Callable, name: str, record: Record) -> Callable:
    """``fn`` wrapped so that every call records what it changed (see the module docstring)."""
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None

    @functools.wraps(fn)
    def watched(*args: Any, **kwargs: Any) -> Any:
        index = record.calls
        record.calls += 1
        _note_coverage(record, name, signature, args, kwargs)
        arguments = _named(signature, args, kwargs)
        before = {arg: _facts(value) for arg, value in arguments}
        state = {what: read() for what, read in GLOBALS.items()}
        try:
            return fn(*args, **kwargs)
        finally:
            changed = [f"{arg}: {what}" for arg, value in arguments for what in _changes(before[arg], value)]
            changed += [f"{what} left changed" for what, read in GLOBALS.items() if read() != state[what]]
            if changed:
                record.effects.append([index, name, changed])

    return watched


def _named(signature: inspect.Signature | None, args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    """The call's arguments by parameter name (``arg0``... when the signature does not bind)."""
    if signature is not None:
        try:
            return list(signature.bind(*args, **kwargs).arguments.items())
        except TypeError:
            pass
    return [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())


def _is_notebook_function(value: Any) -> bool:
    """A plain function a notebook cell defined (the student's code under test), not a library's."""
    return isinstance(value, types.FunctionType) and value.__module__ == "__main__"


class Watched(MutableMapping):
    """The notebook namespace as a probe sees it: the notebook's functions come back watched; what the
    probe writes goes through to the notebook."""

    def __init__(self, ns: MutableMapping[str, Any], record: Record) -> None:
        self.ns, self.record = ns, record

    def __getitem__(self, key: str) -> Any:
        value = self.ns[key]
        return watch(value, key, self.record) if _is_notebook_function(value) else value

    def __setitem__(self, key: str, value: Any) -> None:
        self.ns[key] = value

    def __delitem__(self, key: str) -> None:
        del self.ns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.ns)

    def __len__(self) -> int:
        return len(self.ns)
