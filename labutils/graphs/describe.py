"""Short text for labels: shapes, byte counts, gradient values, saved tensors of an autograd node."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from labutils.graphs.compat import format_fn_attrs

SAVED_PREFIX = "_saved_"
_SAVED_ATTRS: dict[type, tuple[str, ...]] = {}
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
    return str(dtype).removeprefix("torch.")


def describe_shape(shape: tuple[int, ...], dtype: str) -> str:
    """``'(3, 4) float32'``."""
    return f"{tuple(shape)} {dtype}"


def describe_tensor(t: torch.Tensor) -> str:
    """``'(3, 4) float32'``."""
    return describe_shape(tuple(t.shape), dtype_name(t.dtype))


def is_accumulator(fn: object) -> bool:
    """True for the AccumulateGrad node that stands for a leaf tensor."""
    return type(fn).__name__ == "AccumulateGrad"


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


def saved_attr_names(cls: type) -> tuple[str, ...]:
    """Names of the ``_saved_*`` attributes of a built-in backward node class (cached per class)."""
    names = _SAVED_ATTRS.get(cls)
    if names is None:
        names = tuple(a for a in dir(cls) if a.startswith(SAVED_PREFIX))
        _SAVED_ATTRS[cls] = names
    return names


def is_custom_function_node(fn: object) -> bool:
    """True for the backward node of a Python ``torch.autograd.Function``."""
    return isinstance(fn, torch.autograd.function.BackwardCFunction)


def saved_tensors(fn: object) -> tuple[list[tuple[str, torch.Tensor]], str | None]:
    """The tensors ``fn`` saved for backward, as ``(name, tensor)`` pairs, and a problem if any.

    The problem is ``'freed'`` once backward has run without ``retain_graph=True`` and
    ``'modified in-place'`` when a saved tensor was changed after being saved.
    """
    found: list[tuple[str, torch.Tensor]] = []
    try:
        if is_custom_function_node(fn):
            for i, t in enumerate(fn.saved_tensors):  # type: ignore[attr-defined]
                if t is not None:
                    found.append((f"saved[{i}]", t))
            return found, None
        for attr in saved_attr_names(type(fn)):
            _collect(found, attr.removeprefix(SAVED_PREFIX), getattr(fn, attr))
    except RuntimeError as err:
        return [], ("modified in-place" if "inplace operation" in str(err) else "freed")
    return found, None


def _collect(found: list[tuple[str, torch.Tensor]], name: str, value: object) -> None:
    if isinstance(value, torch.Tensor):
        found.append((name, value))
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            if isinstance(item, torch.Tensor):
                found.append((f"{name}[{i}]", item))


def storage_key(t: torch.Tensor) -> tuple[int, int]:
    """Identifies the memory a tensor keeps alive: (storage address, storage bytes)."""
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


def attr_lines(fn: object, max_chars: int = 40) -> list[str]:
    """Non-tensor attributes a built-in node saved (``dim: 1``), formatted like torchviz does."""
    return format_fn_attrs(fn, max_chars)
