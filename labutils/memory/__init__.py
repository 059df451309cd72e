"""Where the memory of a training step goes: parameters, gradients, optimizer state, activations.

``from labutils import memory`` then::

    timeline = memory.track_step(model, torch.optim.Adam(model.parameters()), x, y)
    timeline            # peaks per category as text
    timeline.plot()     # stacked area over the step, inline in Jupyter; .save("step.png")
    memory.compare({"SGD": t_sgd, "Adam": t_adam})   # side by side, one scale

The data is a :class:`MemoryTimeline` (a list of :class:`MemorySample`, one per aten op, with the
phase ``forward``/``backward``/``optimizer``/``zero_grad``, the op, the module and the bytes of each
category). It works on CPU and CUDA; on CUDA each sample also carries
``torch.cuda.memory_allocated()`` and the timeline carries ``max_memory_allocated``; pass
``cuda_snapshot="step.pickle"`` to also save an allocator history for https://pytorch.org/memory_viz.
How it works: :mod:`labutils.memory.tracker`. It does not use ``torch.profiler``.

Inside, one-way (each module imports only those before it): :mod:`~labutils.memory.records` (the data:
categories, storage records, samples, peaks) -> :mod:`~labutils.memory.plot` (matplotlib) ->
:mod:`~labutils.memory.timeline` (``MemoryTimeline``, built from records) -> :mod:`~labutils.memory.dispatch`
(the ``TorchDispatchMode``) -> :mod:`~labutils.memory.tracker` (``MemoryTracker``) ->
:mod:`~labutils.memory.step` (``track_step``, ``checkpointed``, ``compare``).
"""

from labutils.memory.plot import MemoryPlot, plot_timeline
from labutils.memory.records import CATEGORIES, MIB, MemorySample
from labutils.memory.step import checkpointed, compare, track_step
from labutils.memory.timeline import MemoryTimeline
from labutils.memory.tracker import MemoryTracker

__all__ = [
    "CATEGORIES",
    "MIB",
    "MemoryPlot",
    "MemorySample",
    "MemoryTimeline",
    "MemoryTracker",
    "checkpointed",
    "compare",
    "plot_timeline",
    "track_step",
]
