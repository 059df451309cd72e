"""Which ``nn.Module`` call created each autograd node.

Every autograd Node gets a sequence number when it is created (``node._sequence_nr()``), from a
per-thread counter. While recording, a forward pre-hook and a forward hook on every submodule
read that counter (by creating one tiny probe node), so each module call owns the interval of
sequence numbers between its two probes. A node belongs to the innermost call whose interval
contains its number. Parameters belong to the module that owns them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

_PROBE = torch.zeros(1, requires_grad=True)
_NO_END = float("inf")


def current_sequence_nr() -> int | None:
    """The autograd sequence counter now (None when grad mode is off: no nodes are created then)."""
    if not torch.is_grad_enabled():
        return None
    node = _PROBE.view(1).grad_fn
    return None if node is None else node._sequence_nr()


@dataclass
class ModuleRecord:
    """Module calls recorded during a forward pass; see :func:`record_modules`."""

    types: dict[str, str] = field(default_factory=dict)  # module name -> class name
    starts: list[int] = field(default_factory=list)  # one entry per call, in call order
    ends: list[float] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)  # index of the enclosing call, -1 at top
    stacks: list[tuple[str, ...]] = field(default_factory=list)  # module names, outermost first
    first_call: dict[str, tuple[str, ...]] = field(default_factory=dict)
    named_params: dict[str, torch.Tensor] = field(default_factory=dict)  # the model's parameters
    _open: list[int] = field(default_factory=list)

    def stack_of_seq(self, seq: int) -> tuple[str, ...]:
        """Modules (outermost first) whose call created the node with sequence number ``seq``."""
        i = bisect.bisect_right(self.starts, seq) - 1
        while i >= 0 and not seq < self.ends[i]:
            i = self.parents[i]
        return self.stacks[i] if i >= 0 else ()

    def stack_of_node(self, fn: object) -> tuple[str, ...]:
        """Modules whose call created autograd node ``fn``."""
        return self.stack_of_seq(fn._sequence_nr())  # type: ignore[attr-defined]

    def stack_of_param(self, name: str) -> tuple[str, ...]:
        """Modules of the (closest called) module owning parameter ``name``."""
        owner = name
        while "." in owner:
            owner = owner.rsplit(".", 1)[0]
            if owner in self.first_call:
                return self.first_call[owner]
        return ()

    def module_names(self) -> list[str]:
        """Names of the modules that were called, in order of first call."""
        return [name for name in self.first_call if name]

    def _enter(self, name: str) -> None:
        seq = current_sequence_nr()
        if seq is None:
            self._open.append(-1)
            return
        parent = self._open[-1] if self._open else -1
        stack = (self.stacks[parent] if parent >= 0 else ()) + ((name,) if name else ())
        self.starts.append(seq)
        self.ends.append(_NO_END)
        self.parents.append(parent)
        self.stacks.append(stack)
        self.first_call.setdefault(name, stack)
        self._open.append(len(self.starts) - 1)

    def _exit(self) -> None:
        index = self._open.pop() if self._open else -1
        seq = current_sequence_nr()
        if index >= 0 and seq is not None:
            self.ends[index] = seq


@contextmanager
def record_modules(model: nn.Module) -> Iterator[ModuleRecord]:
    """Record which submodule of ``model`` created each autograd node during the ``with`` block.

    Usage::

        with record_modules(model) as rec:
            loss = model(x).pow(2).mean()
        draw_graph(loss, modules=rec, collapse=1)
    """
    record = ModuleRecord()
    record.named_params = dict(model.named_parameters())
    handles = []
    for name, module in model.named_modules():
        record.types[name] = type(module).__name__
        handles.append(module.register_forward_pre_hook(lambda m, a, n=name: record._enter(n)))
        handles.append(module.register_forward_hook(lambda m, a, o: record._exit(), always_call=True))
    try:
        yield record
    finally:
        for handle in handles:
            handle.remove()
