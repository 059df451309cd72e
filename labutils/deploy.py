"""Deployment helpers (chapter 05): short ``torch._dynamo.explain`` summaries, a compile-counting
backend, onnxruntime on torch tensors, a quiet ONNX export, profiler top-ops and a latency table.

Everything here is a thin layer over the PyTorch API the lessons teach; the notebooks show the
underlying calls first and use these helpers to keep the output readable.
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = [
    "AotGraphCounter",
    "CompileCounter",
    "ExplainSummary",
    "LatencyTable",
    "explain_summary",
    "ort_run",
    "ort_session",
    "quiet_onnx_export",
    "quiet_torchao_import",
    "top_ops",
]


@dataclass
class ExplainSummary:
    """The fields of ``torch._dynamo.explain`` worth reading (not the hundreds of guard lines).

    ``graph_break_count`` is what explain reports (``graph_count - 1``); ``break_reasons`` lists
    every break, including one after which no operation is left (so ``len(break_reasons)`` can be
    larger than ``graph_break_count``).
    """

    graph_count: int
    graph_break_count: int
    break_reasons: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [
            f"graphs: {self.graph_count} | graph_break_count: {self.graph_break_count} "
            f"| break reasons: {len(self.break_reasons)}"
        ]
        lines += [f"  break {i}: {reason}" for i, reason in enumerate(self.break_reasons, 1)]
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython display
        printer.text(str(self))


def _short_reason(reason: Any) -> str:
    """First line of a Dynamo break reason, plus the line of the compiled function that caused it.

    The user stack runs from the compiled function (first frame) down to where tracing stopped
    (last frame, possibly inside a library); the first frame is the line to fix.
    """
    text = str(getattr(reason, "reason", reason)).strip().splitlines()[0]
    stack = getattr(reason, "user_stack", None) or []
    if stack:
        frame = stack[0]
        code = (frame.line or "").strip()
        text = f"{text}  <- {frame.name}(): {code}" if code else f"{text}  <- {frame.name}()"
        if len(stack) > 1:
            text += f"  (stopped inside {stack[-1].name}())"
    return text


def explain_summary(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> ExplainSummary:
    """Run ``torch._dynamo.explain(fn)(*args, **kwargs)`` and keep only its summary fields."""
    out = torch._dynamo.explain(fn)(*args, **kwargs)
    return ExplainSummary(
        graph_count=out.graph_count,
        graph_break_count=out.graph_break_count,
        break_reasons=[_short_reason(r) for r in out.break_reasons],
    )


class CompileCounter:
    """A ``torch.compile`` backend that counts compilations and records the example input shapes.

    A backend is just a callable ``(GraphModule, example_inputs) -> callable``; this one runs each
    captured graph eagerly, so counting recompilations costs no C++ compilation::

        counter = CompileCounter()
        f = torch.compile(fn, backend=counter)
    """

    def __init__(self) -> None:
        self.compiles = 0
        self.input_shapes: list[list[tuple[Any, ...]]] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        self.compiles += 1
        # The graph's placeholders carry fake tensors with symbolic sizes (the example inputs are real).
        values = [node.meta.get("example_value") for node in gm.graph.nodes if node.op == "placeholder"]
        self.input_shapes.append([_shape_of(v) for v in values if isinstance(v, torch.Tensor)])
        return gm.forward

    def __repr__(self) -> str:
        return f"CompileCounter(compiles={self.compiles}, input_shapes={self.input_shapes})"


class AotGraphCounter:
    """A backend that lets AOTAutograd split forward and backward graphs and counts both.

    ``torch.compile(model, backend=counter.backend)``; after a forward and a ``backward()``,
    ``counter.forward_graphs`` and ``counter.backward_graphs`` say how many graphs of each kind
    were compiled. The graphs run eagerly (no C++ compilation).
    """

    def __init__(self) -> None:
        from torch._dynamo.backends.common import aot_autograd
        from torch._functorch.aot_autograd import make_boxed_func

        self.forward_graphs = 0
        self.backward_graphs = 0

        def forward_compiler(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
            self.forward_graphs += 1
            return make_boxed_func(gm.forward)

        def backward_compiler(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
            self.backward_graphs += 1
            return make_boxed_func(gm.forward)

        self.backend = aot_autograd(fw_compiler=forward_compiler, bw_compiler=backward_compiler)

    def __repr__(self) -> str:
        return (
            f"AotGraphCounter(forward_graphs={self.forward_graphs}, backward_graphs={self.backward_graphs})"
        )


def _shape_of(t: torch.Tensor) -> tuple[Any, ...]:
    """A shape with symbolic sizes shown by name (``s77``) and static sizes as ints."""
    return tuple(s if isinstance(s, int) else str(s) for s in t.shape)


_UPSTREAM_NOISE = r".*isinstance\(treespec, LeafSpec\).*"


@contextmanager
def quiet_onnx_export() -> Iterator[None]:
    """Silence exactly two pieces of upstream noise of ``torch.onnx.export(dynamo=True)`` in 2.13.

    - the exporter's log lines "torchvision is not installed. Skipping torchvision::nms" (the
      course does not use torchvision);
    - torch's own internal ``FutureWarning`` about ``isinstance(treespec, LeafSpec)`` raised from
      inside the exporter (not from the caller's code).

    Any other warning or log message still reaches the notebook.
    """
    logger = logging.getLogger("torch.onnx._internal.exporter._registration")
    old_level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_UPSTREAM_NOISE, category=FutureWarning)
            yield
    finally:
        logger.setLevel(old_level)


# What importing torchao 0.18 beside torch 2.13 logs: two prebuilt CUDA kernels that cannot load on a
# CPU-only machine, and a pytree notice about one of torchao's own enums.
_TORCHAO_IMPORT_NOISE = re.compile(r"Failed to load .*torchao.*\.so|.*KernelPreference.* is an Enum subclass")


class _DropMatching(logging.Filter):
    """A logging filter that drops the records whose message matches ``pattern``."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        super().__init__()
        self.pattern = pattern

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.pattern.match(record.getMessage())


@contextmanager
def quiet_torchao_import() -> Iterator[None]:
    """Import torchao without its upstream import-time log lines (torchao 0.18, torch 2.13).

    Drops exactly two kinds of record: torchao's "Failed to load .../torchao/_C_*.so" for its CUDA-only
    kernels (this course computes on a CPU) and torch's pytree notice that torchao's
    ``KernelPreference`` enum need not be registered. Every other log record and every warning still
    reaches the notebook.
    """
    drop = _DropMatching(_TORCHAO_IMPORT_NOISE)
    loggers = [logging.getLogger("torchao"), logging.getLogger("torch.utils._pytree")]
    for logger in loggers:
        logger.addFilter(drop)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(drop)


def ort_session(model: str | os.PathLike[str] | bytes) -> Any:
    """An onnxruntime ``InferenceSession`` on the CPU provider, from a ``.onnx`` path or model bytes.

    It computes on as many threads as torch does (``torch.get_num_threads()``), so a timing of the two
    compares runtimes, not thread counts.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    source = model if isinstance(model, bytes) else os.fspath(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def ort_run(session: Any, *inputs: torch.Tensor) -> list[torch.Tensor]:
    """Run an onnxruntime session on torch tensors (positional, in the graph's input order)."""
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(inputs):
        raise ValueError(f"the ONNX graph takes {len(names)} inputs ({names}), got {len(inputs)}")
    feeds = {name: t.detach().cpu().numpy() for name, t in zip(names, inputs, strict=True)}
    return [torch.from_numpy(out) for out in session.run(None, feeds)]


def top_ops(prof: Any, n: int = 8, device: str = "cpu") -> list[tuple[str, float]]:
    """The ``n`` operators with the largest *self* time in a finished ``torch.profiler.profile``.

    Returns ``(name, milliseconds)`` pairs, largest first, plus an ``"other"`` entry for the rest,
    so the values add up to the total self time.
    """
    attr = "self_device_time_total" if device == "cuda" else "self_cpu_time_total"
    events = [(e.key, getattr(e, attr) / 1e3) for e in prof.key_averages()]
    events = [(k, ms) for k, ms in events if ms > 0]
    events.sort(key=lambda kv: kv[1], reverse=True)
    head, rest = events[:n], events[n:]
    if rest:
        head.append(("other", sum(ms for _, ms in rest)))
    return head


@dataclass(repr=False)
class LatencyTable:
    """Latency rows measured by a notebook, shown as a markdown table with speedups vs a baseline.

    ``add(name, ms)`` appends a row; the first row is the baseline unless ``baseline`` names one.
    """

    title: str = "latency"
    rows: list[tuple[str, float, str]] = field(default_factory=list)
    baseline: str | None = None

    def add(self, name: str, ms: float, note: str = "") -> None:
        """Append a measured row (milliseconds)."""
        if ms <= 0:
            raise ValueError(f"latency must be positive, got {ms} ms for {name!r}")
        self.rows.append((name, float(ms), note))

    def speedups(self) -> dict[str, float]:
        """``baseline_ms / row_ms`` per row (> 1 means faster than the baseline)."""
        if not self.rows:
            return {}
        base_name = self.baseline or self.rows[0][0]
        base = {name: ms for name, ms, _ in self.rows}[base_name]
        return {name: base / ms for name, ms, _ in self.rows}

    def to_markdown(self) -> str:
        """The table as GitHub-flavoured markdown."""
        speed = self.speedups()
        lines = [
            f"**{self.title}**",
            "",
            "| runtime | median (ms) | vs baseline | note |",
            "|---|---:|---:|---|",
        ]
        lines += [f"| {name} | {ms:.3f} | {speed[name]:.2f}x | {note} |" for name, ms, note in self.rows]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def __repr__(self) -> str:
        return self.to_markdown()
