"""Short text for labels: shapes, byte counts, gradient values, saved tensors of an autograd node."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import torch

from labutils.graphs.compat import format_fn_attrs

SAVED_PREFIX = "_saved_"
_SAVED_ATTRS: dict[type, tuple[str, ...]] = {}
_CUSTOM: dict[type, bool] = {}
_DTYPE_NAMES: dict[torch.dtype, str] = {}
_VALUES_SHOWN = 6


def format_bytes(nbytes: int) -> str:
    """``1536`` -> ``'1.5 KiB'`` (binary units)."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def tensor_bytes(t: torch.Tensor) -> int:
    """Logical size of a tensor: ``numel * element_size`` (a view counts only what it shows)."""
    return t.numel() * t.element_size()


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``'float32'``."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def describe_shape(shape: tuple[int, ...], dtype: str) -> str:
    """``'(3, 4) float32'``."""
    return f"{tuple(shape)} {dtype}"


def describe_tensor(t: torch.Tensor) -> str:
    """``'(3, 4) float32'``."""
    return describe_shape(tuple(t.shape), dtype_name(t.dtype))


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects (it rescans them all)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def format_values(t: torch.Tensor) -> str:
    """Values of a small tensor (``[0.5, -1, 2]``), or its norm when it has many elements."""
    flat = t.detach().reshape(-1)
    if flat.numel() <= _VALUES_SHOWN:
        return "[" + ", ".join(f"{v:.3g}" for v in flat.tolist()) + "]"
    return f"|.|={flat.double().norm().item():.3g}"


def grad_line(t: torch.Tensor) -> str | None:
    """``'grad [1, 2]'`` for a tensor whose ``.grad`` is readable, ``'grad None'`` if not yet set.

    Returns None for a non-leaf tensor that does not retain its grad (reading its ``.grad``
    would only warn).
    """
    if not (t.is_leaf or t.retains_grad):
        return None
    return "grad None" if t.grad is None else f"grad {format_values(t.grad)}"


class SavedTensor(NamedTuple):
    """A tensor an op saved for backward (described, not kept: drawing must not hold memory)."""

    name: str  # the attribute: self, other, result, mat2 ... (saved[i] for a custom Function)
    shape: tuple[int, ...]
    dtype: str
    nbytes: int  # numel * element_size
    storage: tuple[int, int]  # (address, bytes) of the storage it lives in


def saved_attr_names(cls: type) -> tuple[str, ...]:
    """``_saved_*`` attributes of a built-in backward node class that may hold tensors (cached).

    Attributes seen holding something else (sizes, scalars) are dropped from the cache by
    :func:`saved_tensors`, so big graphs of one op type pay for them once.
    """
    names = _SAVED_ATTRS.get(cls)
    if names is None:
        names = _SAVED_ATTRS[cls] = tuple(a for a in dir(cls) if a.startswith(SAVED_PREFIX))
    return names


def is_custom_function_node(fn: object) -> bool:
    """True for the backward node of a Python ``torch.autograd.Function``."""
    custom = _CUSTOM.get(type(fn))
    if custom is None:
        custom = _CUSTOM[type(fn)] = isinstance(fn, torch.autograd.function.BackwardCFunction)
    return custom


def saved_tensors(fn: object) -> tuple[tuple[SavedTensor, ...], str | None]:
    """The tensors ``fn`` saved for backward, described, and a problem if any.

    The problem is ``'freed'`` once backward has run without ``retain_graph=True`` and
    ``'modified in-place'`` when a saved tensor was changed after being saved.
    """
    found: list[tuple[str, torch.Tensor]] = []
    try:
        if is_custom_function_node(fn):
            found = [(f"saved[{i}]", t) for i, t in enumerate(fn.saved_tensors) if t is not None]  # type: ignore[attr-defined]
        else:
            for attr in saved_attr_names(type(fn)):
                value = getattr(fn, attr)
                if isinstance(value, torch.Tensor):
                    found.append((attr[len(SAVED_PREFIX) :], value))
                elif isinstance(value, (tuple, list)):
                    found.extend(
                        (f"{attr[len(SAVED_PREFIX) :]}[{i}]", v)
                        for i, v in enumerate(value)
                        if isinstance(v, torch.Tensor)
                    )
                elif value is not None:  # a scalar or string: never a tensor for this op type
                    _SAVED_ATTRS[type(fn)] = tuple(a for a in _SAVED_ATTRS[type(fn)] if a != attr)
    except RuntimeError as err:
        return (), ("modified in-place" if "inplace operation" in str(err) else "freed")
    return tuple(describe_saved(name, t) for name, t in found), None


def describe_saved(name: str, t: torch.Tensor) -> SavedTensor:
    """Shape, dtype, bytes and storage of one saved tensor."""
    storage = t.untyped_storage()
    return SavedTensor(
        name, tuple(t.shape), dtype_name(t.dtype), tensor_bytes(t), (storage.data_ptr(), storage.nbytes())
    )


def attr_lines(fn: object, max_chars: int = 40) -> list[str]:
    """Non-tensor attributes a built-in node saved (``dim: 1``), formatted like torchviz does."""
    return format_fn_attrs(fn, max_chars)
