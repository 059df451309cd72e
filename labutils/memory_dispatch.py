"""The low-level parts of :mod:`labutils.memory_tracker`: a storage's record and the dispatch mode.

``OpRecorder`` sees every aten op; only ops that can return new memory (not views, not in-place
ops, not profiler markers) reach the tracker, which keeps the per-op cost at a few microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from labutils.memory_timeline import CATEGORIES

if TYPE_CHECKING:
    from labutils.memory_tracker import MemoryTracker

# Roles in order of strength: the strongest role a storage ever had is its category.
_RANK = {name: rank for rank, name in enumerate(reversed(CATEGORIES))}


@dataclass(slots=True)
class StorageRecord:
    """One storage seen by the tracker: its size, when it was born and freed (sample indices)."""

    nbytes: int
    born: int
    freed: int | None = None
    category: str = "other"
    pinned: bool = False

    def mark(self, category: str) -> None:
        """Give this storage a role; the strongest role wins (a pinned input stays "other")."""
        if not self.pinned and _RANK[category] > _RANK[self.category]:
            self.category = category


class OpRecorder(TorchDispatchMode):
    """The dispatch mode: run each op, register new output storages, take one sample."""

    def __init__(self, tracker: MemoryTracker) -> None:
        super().__init__()
        self.tracker = tracker

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Eager-only mode: skip the per-op torch._disable_dynamo wrapper (about a third of our cost).
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        out = func(*args, **(kwargs or {}))
        name = _ALLOCATING.get(func)
        if name is None:
            name = _ALLOCATING[func] = _allocating_name(func)
        if name:
            self.tracker._after_op(name, out)
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
