"""Record which tensor storages are alive during a training step, and what each one is for.

A :class:`MemoryTracker` is a context manager. While it is active it sees

* every aten operation (a ``TorchDispatchMode``): new output storages are allocations;
* every storage's death (a ``weakref`` callback on ``untyped_storage()``): frees;
* what autograd saves for backward (``saved_tensors_hooks``): activations;
* every gradient written into ``param.grad`` (``register_post_accumulate_grad_hook``): gradients;
* the optimizer's state after ``step()`` (``register_step_post_hook``): optimizer state.

Storages are deduplicated by ``untyped_storage()`` (views share one), so each byte is counted once.
A storage's category is decided by the strongest role it ever had (parameter > gradient >
optimizer state > activation > other) and applies to its whole life: Adam's ``exp_avg`` is
optimizer state from the moment ``zeros_like`` allocated it. The result is a
:class:`~labutils.memory.timeline.MemoryTimeline`.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterable, Iterator

import torch
from torch import nn
from torch.utils._pytree import tree_iter

from labutils.memory.dispatch import OpRecorder, in_backward, is_recomputing
from labutils.memory.records import StorageRecord
from labutils.memory.timeline import MemoryTimeline, build_timeline


class MemoryTracker:
    """Track tensor memory by category over a block of code (usually one training step).

    Example::

        tracker = MemoryTracker(model, optimizer, inputs=(x, y))
        with tracker:
            with tracker.phase("forward"):
                loss = F.cross_entropy(model(x), y)
            with tracker.phase("backward"):
                loss.backward()
            with tracker.phase("optimizer"):
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
        tracker.timeline.plot()

    Args:
        model: its parameters and buffers are "parameters"; its submodule names label forward ops.
        optimizer: optional; its state tensors are "optimizer state".
        inputs: tensors that exist before the step (the batch); counted from the start.
        cuda_snapshot: on CUDA, a path where ``torch.cuda.memory._dump_snapshot`` writes an
            allocator history for https://pytorch.org/memory_viz (ignored on CPU).

    On CUDA, entering resets the allocator's peak statistics, so the timeline's
    ``cuda_stats["max_memory_allocated"]`` is the peak of the tracked block. Eager mode only
    (the dispatch mode does not trace into ``torch.compile``d code).

    Limits: ``backward(create_graph=True)`` makes backward temporaries look like recomputed
    activations; storages resized in place (``resize_``) keep their first size.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        inputs: Iterable[torch.Tensor] = (),
        cuda_snapshot: str | None = None,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.inputs = tuple(inputs)
        self.cuda_snapshot = cuda_snapshot
        self.device = self._model_device()
        self._on_cuda = self.device.type == "cuda"
        self.records: list[StorageRecord] = []
        self._live: dict[int, StorageRecord] = {}
        self._refs: dict[weakref.ref, tuple[int, StorageRecord]] = {}
        self._steps: list[tuple[str, str, str]] = []  # (phase, op, module) per sample
        self._cuda_allocated: list[int] = []
        self._phase = "start"
        self._modules: list[str] = []
        self._active = False
        self._stack = contextlib.ExitStack()
        self._params = list(model.parameters())
        self._timeline: MemoryTimeline | None = None
        self._cuda_end: dict[str, int] | None = None

    # -- public ------------------------------------------------------------------------------
    def __enter__(self) -> MemoryTracker:
        if self._steps:
            raise RuntimeError("a MemoryTracker records one block: make a new one for the next")
        self._active = True
        on_cuda = self.device.type == "cuda"
        if on_cuda:
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            if self.cuda_snapshot:
                torch.cuda.memory._record_memory_history(max_entries=100_000)
        self._register_existing()
        self._sample("start", "")
        self._install_hooks()
        self._stack.enter_context(torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack))
        self._stack.enter_context(OpRecorder(self._after_op))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        self._scan_grads()
        self._scan_optimizer()
        self._phase = "end"
        self._sample("end", "")
        self._active = False
        self._refs.clear()
        self._cuda_end = self._cuda_stats()
        if self.device.type == "cuda" and self.cuda_snapshot:
            torch.cuda.memory._dump_snapshot(self.cuda_snapshot)
            torch.cuda.memory._record_memory_history(enabled=None)

    @property
    def timeline(self) -> MemoryTimeline:
        """The samples, built from the recorded lifetimes on first access after the block ends."""
        if self._active or not self._steps:
            raise RuntimeError("the timeline exists once the tracked block has ended")
        if self._timeline is None:
            self._timeline = build_timeline(
                self.records,
                self._steps,
                self._cuda_allocated,
                device=str(self.device),
                cuda_stats=self._cuda_end,
            )
        return self._timeline

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Label the samples taken inside this block (``forward``, ``backward`` ...); ends with a sample."""
        previous, self._phase = self._phase, name
        try:
            yield
        finally:
            if self._active:
                self._sample(f"end of {name}", "")  # frees without ops (zero_grad) show up here
            self._phase = previous

    # -- registration ------------------------------------------------------------------------
    def _record(self, tensor: torch.Tensor, category: str = "other") -> StorageRecord | None:
        """Find or create the record of ``tensor``'s storage and give it ``category``.

        Storages are keyed by ``data_ptr`` alone: host and device addresses never overlap (CUDA's
        unified virtual addressing), and meta/empty storages (pointer 0) are skipped.
        """
        storage = tensor.untyped_storage()
        key = storage.data_ptr()
        if key == 0:
            return None
        record = self._live.get(key)
        if record is None:
            record = StorageRecord(storage.nbytes(), len(self._steps))
            self.records.append(record)
            self._live[key] = record
            self._refs[weakref.ref(storage, self._on_free)] = (key, record)
        if category != "other":
            record.mark(category)
        return record

    def _on_free(self, ref: weakref.ref) -> None:
        """Weakref callback: the storage is gone; later samples no longer count it."""
        key, record = self._refs.pop(ref, (None, None))
        if key is None or record is None or not self._active:
            return
        record.freed = len(self._steps)
        if self._live.get(key) is record:
            del self._live[key]

    def _register_existing(self) -> None:
        tensor: torch.Tensor
        for tensor in self._params:
            self._record(tensor, "parameters")
        for tensor in self.model.buffers():
            self._record(tensor, "parameters")
        self._scan_grads()
        self._scan_optimizer()
        for tensor in self.inputs:  # the batch is data, not an activation, even when saved
            record = self._record(tensor, "other")
            if record is not None and record.category == "other":
                record.pinned = True

    def _scan_grads(self) -> None:
        for param in self._params:
            if param.grad is not None:
                self._record(param.grad, "gradients")

    def _scan_optimizer(self) -> None:
        if self.optimizer is None:
            return
        for state in self.optimizer.state.values():
            for value in state.values():
                if isinstance(value, torch.Tensor):
                    self._record(value, "optimizer state")

    # -- hooks -------------------------------------------------------------------------------
    def _install_hooks(self) -> None:
        def on_grad(param: torch.Tensor) -> None:
            if param.grad is not None:
                self._record(param.grad, "gradients")

        for param in self._params:
            if param.requires_grad:
                self._stack.callback(param.register_post_accumulate_grad_hook(on_grad).remove)
        if self.optimizer is not None:
            handle = self.optimizer.register_step_post_hook(lambda *_: self._scan_optimizer())
            self._stack.callback(handle.remove)
        for name, module in self.model.named_modules():
            pre = module.register_forward_pre_hook(self._enter_module(name or type(module).__name__))
            post = module.register_forward_hook(self._leave_module, always_call=True)
            self._stack.callback(pre.remove)
            self._stack.callback(post.remove)

    def _enter_module(self, label: str):
        def hook(*_: object) -> None:
            self._modules.append(label)

        return hook

    def _leave_module(self, *_: object) -> None:
        if self._modules:
            self._modules.pop()

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        self._record(tensor, "activations")
        # Detach (as torch.utils.checkpoint does): a saved output must not keep its own grad_fn alive.
        return tensor.detach() if tensor.requires_grad else tensor

    def _after_op(self, name: str, out: object) -> None:
        recomputing = is_recomputing()
        category = "activations" if recomputing else "other"
        if isinstance(out, torch.Tensor):
            self._record(out, category)
        else:
            for value in tree_iter(out):
                if isinstance(value, torch.Tensor):
                    self._record(value, category)
        module = self._modules[-1] if self._modules else ""
        if recomputing:
            module = f"{module} (recompute)".lstrip()
        elif module and in_backward():
            module = ""
        self._steps.append((self._phase, name, module))
        if self._on_cuda:
            self._cuda_allocated.append(torch.cuda.memory_allocated(self.device))

    def _sample(self, op: str, module: str) -> None:
        self._steps.append((self._phase, op, module))
        if self._on_cuda:
            self._cuda_allocated.append(torch.cuda.memory_allocated(self.device))

    # -- device ------------------------------------------------------------------------------
    def _model_device(self) -> torch.device:
        for tensor in self.model.parameters():
            return tensor.device
        return torch.device("cpu")

    def _cuda_stats(self) -> dict[str, int] | None:
        if self.device.type != "cuda":
            return None
        torch.cuda.synchronize(self.device)
        return {
            "memory_allocated": torch.cuda.memory_allocated(self.device),
            "max_memory_allocated": torch.cuda.max_memory_allocated(self.device),
            "memory_reserved": torch.cuda.memory_reserved(self.device),
        }


def _unpack(tensor: torch.Tensor) -> torch.Tensor:
    return tensor
