"""The low-level part of :mod:`labutils.memory.tracker`: the dispatch mode that sees every aten op.

``OpRecorder`` sees every aten op; only ops that can return new memory (not views, not in-place
ops, not profiler markers) reach the tracker (its ``on_op`` callback), which keeps the per-op cost
at a few microseconds. It knows nothing of the tracker itself, so the import order stays one-way.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

OnOp = Callable[[str, object], None]
"""What :class:`OpRecorder` calls after each allocating op: ``on_op(op name, op output)``."""


class OpRecorder(TorchDispatchMode):
    """The dispatch mode: run each op; for an op that can allocate, hand its output to ``on_op``.

    ``on_op`` is the tracker's ``_after_op`` (register new output storages, take one sample).
    """

    def __init__(self, on_op: OnOp) -> None:
        super().__init__()
        self.on_op = on_op

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Eager-only mode: skip the per-op torch._disable_dynamo wrapper (about a third of our cost).
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = _ALLOCATING.get(func)
        if name is None:
            name = _ALLOCATING[func] = _allocating_name(func)
        if name:
            self.on_op(name, out)
        return out


_ALLOCATING: dict[object, str] = {}


def _allocating_name(func: torch._ops.OpOverload) -> str:
    """The op's name if it can return new memory; "" for views, in-place ops and profiler markers."""
    returns_alias = any(r.alias_info is not None for r in func._schema.returns)
    if func.is_view or returns_alias or func.namespace == "profiler":
        return ""
    return func.__name__


def in_backward() -> bool:
    """True while the autograd engine runs a backward pass."""
    return torch._C._current_graph_task_id() != -1


def is_recomputing() -> bool:
    """True while autograd runs backward and grad mode is on: checkpoint recomputes a forward."""
    return torch.is_grad_enabled() and in_backward()
