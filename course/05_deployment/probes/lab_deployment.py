"""Probes of lab_deployment: each drives one exercise on inputs and models drawn for this grading run.

Exporting and compiling are slow, so each probe exports a few small models and then runs what was
exported on many drawn inputs. The benchmark probe runs the student's timer against a simulated
clock (``time.perf_counter`` and ``torch.cuda.synchronize`` replaced for the duration of the call):
the timed function "takes" drawn durations, so the observation is exact and does not depend on the
load of the grading machine.
"""

import os
import tempfile
import time
from collections.abc import Callable

import onnxruntime
import torch
import torch._dynamo

from graders.probing import Draw, Namespace, outcome, probe
from graders.rules import forbidden

# "No .item(), no Python if on tensor values": every way to pull a tensor's value into Python.
# .item(), bool(t), float(t), int(t), `if t:` all run aten._local_scalar_dense; .tolist() and
# .numpy() reach the data without an operator.
TO_PYTHON_OPS = ["aten._local_scalar_dense"]
TO_PYTHON_CALLS = {"torch.Tensor.tolist": torch.Tensor.tolist, "torch.Tensor.numpy": torch.Tensor.numpy,
                   "torch.Tensor.item": torch.Tensor.item}
# "Run the ONNX file in onnxruntime": its session's run methods (deploy.ort_run calls Session.run).
ORT_RUNS = {"onnxruntime": onnxruntime.InferenceSession.run,
            "onnxruntime (OrtValues)": onnxruntime.InferenceSession.run_with_ort_values,
            "onnxruntime (IO binding)": onnxruntime.InferenceSession.run_with_iobinding,
            "onnxruntime (C session)": onnxruntime.capi._pybind_state.InferenceSession.run}
# "Never call it on other devices": the real synchronize functions (the probe replaces
# torch.cuda.synchronize with its simulated clock; a submission that kept the original, or used
# another spelling, calls one of these).
CUDA_SYNCS = {"torch.cuda.synchronize": torch.cuda.synchronize,
              "torch.cuda.Stream.synchronize": torch.cuda.Stream.synchronize,
              "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize,
              "torch.accelerator.synchronize": torch.accelerator.synchronize}


def _mlp(draw: Draw, n_in: int, n_out: int, hidden: int) -> torch.nn.Module:
    """Linear, ReLU or GELU, Linear, in eval mode, with drawn weights (no saturating activation)."""
    act = draw.choice([torch.nn.ReLU, torch.nn.GELU])()
    net = torch.nn.Sequential(torch.nn.Linear(n_in, hidden), act, torch.nn.Linear(hidden, n_out))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(draw.randn(*p.shape) * 0.5)
    return net.eval()


def _export_case(ns: Namespace, draw: Draw) -> dict:
    """Export a drawn model with a drawn bound; run the program inside, at and past the bound."""
    n_in, n_out = draw.randint(2, 8), draw.randint(1, 4)
    net = _mlp(draw, n_in, n_out, draw.randint(4, 16))
    max_batch = draw.randint(6, 40)
    example = draw.randn(draw.randint(2, max_batch - 1), n_in)
    program = ns["export_with_dynamic_batch"](net, example, max_batch)
    obs: dict = {"type": type(program).__name__}
    module = outcome(lambda: program.module())
    inside = [1, 2, max_batch - 1, max_batch, draw.randint(3, max_batch - 2)]
    past = [max_batch + 1, max_batch + draw.randint(2, 30)]
    obs["inside"] = [outcome(module, draw.randn(n, n_in)) for n in inside]
    obs["past"] = [outcome(module, draw.randn(n, n_in)) for n in past]
    obs["other_features"] = outcome(module, draw.randn(draw.randint(1, max_batch), n_in + draw.randint(1, 3)))
    constraints = outcome(lambda: [(str(r.lower), str(r.upper)) for r in program.range_constraints.values()])
    obs["range_constraints"] = constraints
    return obs


@probe("test_export_with_dynamic_batch")
def export_with_dynamic_batch(ns: Namespace, draw: Draw) -> list:
    """export_with_dynamic_batch: the program on batches inside, at and past the bound, and its range"""
    return [_export_case(ns, draw) for _ in range(2)]


def _ort_outputs(path: str, inputs: list[torch.Tensor]) -> list:
    """Run the ONNX file at ``path`` in onnxruntime on each input (or the error it raised)."""
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    dims = [type(d).__name__ for d in session.get_inputs()[0].shape]
    return [dims] + [outcome(lambda x=x: torch.from_numpy(session.run(None, {name: x.numpy()})[0])) for x in inputs]


class _ExportSkew(torch.nn.Module):
    """``net``, plus 1e-3 * max|row| per row only when exported: eager and ONNX then differ by an amount
    set by each input (largest on the largest batch), not by float rounding, which varies by CPU and
    thread count."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.net(x)
        if torch.compiler.is_exporting():
            y = y + 1e-3 * x.abs().amax(dim=1, keepdim=True)
        return y


@probe("test_onnx_max_abs_diff", rtol=1e-4, atol=1e-6)
def onnx_max_abs_diff(ns: Namespace, draw: Draw) -> dict:
    """onnx_max_abs_diff: the returned maximum over all inputs (run in onnxruntime), and the exported file at other batch sizes"""
    n_in = draw.randint(32, 64)
    net = _ExportSkew(_mlp(draw, n_in, draw.randint(16, 64), draw.randint(32, 64))).eval()
    # Batches of 12 or more rows, or of a multiple of 4, can round exactly like eager on some CPUs:
    # the large batches, whose rounding error should dominate, avoid them.
    sizes = [draw.choice([4, 8])] + [draw.choice([1, 2, 3, 5, 6, 7, 9, 10, 11]) for _ in range(draw.randint(2, 3))]
    scales = [draw.choice([0.5, 1.0])] + [draw.choice([1.0, 2.0, 100.0]) for _ in sizes[1:]]
    scales[draw.randint(1, len(sizes) - 1)] = 1000.0  # never the example (inputs[0])
    inputs = [draw.randn(n, n_in) * s for n, s in zip(sizes, scales, strict=True)]
    others = [draw.randn(n, n_in) for n in (1, draw.randint(10, 40))]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"net{draw.randint(0, 10**6)}.onnx")
        with forbidden(count=ORT_RUNS) as seen:
            got = ns["onnx_max_abs_diff"](net, inputs, path)
        exists = os.path.exists(path)
        file_outputs = outcome(_ort_outputs, path, others) if exists else None
    return {"returned": float(got) if isinstance(got, float) else got, "file_exists": exists,
            "file_outputs": file_outputs, "ran_onnxruntime": bool(seen.ops)}


def _breaking_fn(draw: Draw, trailing: bool) -> Callable:
    """A function with a drawn sequence of explicit and data-dependent graph breaks.

    ``trailing``: one more break at the end, followed by nothing but ``return``.
    """
    lines = ["def fn(x, w):", "    y = torch.sin(x) * w"]
    for _ in range(draw.randint(0, 3)):
        if draw.randint(0, 2):
            lines.append("    torch._dynamo.graph_break()")
        else:
            lines += ["    if y.sum() > 0:", f"        y = y + {draw.randint(1, 5)}"]
        lines.append(f"    y = y * {draw.randint(2, 5)}")
    if trailing:
        lines.append("    torch._dynamo.graph_break()")
    lines.append("    return y")
    scope = {"torch": torch}
    exec("\n".join(lines), scope)  # noqa: S102 - instructor code, built from the draw
    return scope["fn"]


@probe("test_count_graph_breaks")
def count_graph_breaks(ns: Namespace, draw: Draw) -> list:
    """count_graph_breaks on functions with explicit, data-dependent and trailing graph breaks"""
    trailing = [True, True, False, False, draw.choice([True, False])]
    draw.random.shuffle(trailing)
    cases = []
    for ends_with_break in trailing:
        fn = _breaking_fn(draw, ends_with_break)
        x, w = draw.randn(draw.randint(2, 9)), draw.randn(1)
        cases.append(ns["count_graph_breaks"](fn, x, w))
    torch._dynamo.reset()
    return cases


def _gated_inputs(draw: Draw) -> list[torch.Tensor]:
    """Positive, negative and exactly-zero means, mixed signs, several shapes."""
    ints = torch.randint(-6, 7, (draw.randint(2, 6),), generator=draw.gen).float() / 2
    zero_mean = torch.cat([ints, -ints])  # halves of small ints: the mean is exactly 0
    mixed = draw.randn(draw.randint(2, 4), draw.randint(2, 4))
    mixed = mixed - mixed.mean() + draw.choice([0.1, -0.1, 0.3])  # mean of either sign, entries of both
    return [zero_mean, zero_mean.flip(0).reshape(2, -1), mixed, -mixed, draw.randn(2, 3, 2).abs() + 0.05,
            -(draw.randn(3, 2).abs() + 0.05)]


@probe("test_gated_activation")
def gated_activation(ns: Namespace, draw: Draw) -> dict:
    """gated_activation: values on positive, negative and zero-mean inputs, one graph, fullgraph compile, no .item()"""
    fn = ns["gated_activation"]
    inputs = _gated_inputs(draw)
    eager = []
    for x in inputs:
        with forbidden(aten=TO_PYTHON_OPS, calls=TO_PYTHON_CALLS) as seen:
            got = outcome(fn, x)
        eager.append({"value": got, "violations": seen.violations})
    torch._dynamo.reset()
    explained = outcome(lambda: torch._dynamo.explain(fn)(inputs[2]))
    graphs = outcome(lambda: [explained.graph_count, len(explained.break_reasons)])
    full = torch.compile(fn, backend="eager", fullgraph=True)
    try:
        return {"eager": eager, "compiled": [outcome(full, x) for x in inputs], "graphs_and_breaks": graphs}
    finally:
        torch._dynamo.reset()


def _scale_inputs(draw: Draw, limit: float, shape: tuple[int, int]) -> list[torch.Tensor]:
    """Peaks above the limit (positive and negative), below it, and exactly at it."""
    base = (torch.rand(*shape, generator=draw.gen) * 2 - 1) * limit * 0.9
    above = base.clone()
    above.view(-1)[draw.randint(0, above.numel() - 1)] = limit * draw.choice([1.5, 3.0, 7.0])
    negative = base.clone()
    negative.view(-1)[draw.randint(0, negative.numel() - 1)] = -limit * draw.choice([1.25, 2.0, 5.0])
    at_limit = base.clone()
    at_limit.view(-1)[draw.randint(0, at_limit.numel() - 1)] = draw.choice([limit, -limit])
    return [base, above, negative, at_limit, draw.randn(*shape) * limit * 3]


def _scale_case(ns: Namespace, draw: Draw) -> dict:
    """One SafeScale with a drawn limit: eager outputs, the exported graph's branches and outputs."""
    limit = draw.choice([0.5, 1.0, 1.5, 2.0, 3.0])
    shape = (draw.randint(1, 4), draw.randint(2, 5))
    module = ns["SafeScale"](limit=limit).eval()
    inputs = _scale_inputs(draw, limit, shape)
    obs: dict = {"eager": [outcome(module, x) for x in inputs]}
    exported = outcome(torch.export.export, module, (inputs[draw.randint(0, len(inputs) - 1)],))
    if isinstance(exported, torch.export.ExportedProgram):
        obs["higher_order_ops"] = sorted(str(n.target) for n in exported.graph.nodes
                                         if isinstance(n.target, torch._ops.HigherOrderOperator))
        program = exported.module()
        obs["exported"] = [outcome(program, x) for x in inputs]
    else:
        obs["export"] = exported
    return obs


@probe("test_SafeScale")
def safe_scale(ns: Namespace, draw: Draw) -> list:
    """SafeScale: eager and exported outputs on peaks above, below and at the limit; a cond in the graph"""
    return [_scale_case(ns, draw) for _ in range(2)]


class _Clock:
    """A simulated clock: the timed function takes drawn durations; CUDA work waits for synchronize."""

    def __init__(self, durations: list[float], cuda: bool) -> None:
        self.now, self.pending, self.cuda = 1000.0, 0.0, cuda
        self.durations, self.calls, self.syncs, self.args = durations, 0, 0, []

    def perf_counter(self) -> float:
        """The simulated time, in seconds."""
        return self.now

    def synchronize(self, *args: object, **kwargs: object) -> None:
        """Wait for the simulated device: queued work completes."""
        self.syncs += 1
        self.now += self.pending
        self.pending = 0.0

    def fn(self, *args: object) -> None:
        """The function under benchmark: on CPU it takes its time, on CUDA it only queues it."""
        duration = self.durations[self.calls % len(self.durations)]
        self.calls += 1
        self.args.append(list(args))
        self.now += 1e-6  # the launch (or call) overhead
        if self.cuda:
            self.pending += duration
        else:
            self.now += duration


def _patched(ns: Namespace, replacements: list[tuple[object, str, object]]) -> list:
    """Install ``replacements`` ((owner, attribute, new)), also where the notebook bound the original
    to a name of its own (``from time import perf_counter``); return what to restore."""
    undo = []
    for owner, attr, new in replacements:
        original = getattr(owner, attr)
        undo.append((owner, attr, original))
        setattr(owner, attr, new)
        for key, value in list(ns.items()):
            if value is original:
                undo.append((ns, key, original))
                ns[key] = new
    return undo


def _restore(undo: list) -> None:
    """Undo :func:`_patched`."""
    for owner, attr, original in reversed(undo):
        if owner.__class__ is dict:
            owner[attr] = original
        else:
            setattr(owner, attr, original)


def _bench_case(ns: Namespace, draw: Draw, device: str) -> dict:
    """Benchmark a simulated function with drawn per-call durations on ``device``."""
    warmup, repeats = draw.randint(0, 4), draw.randint(1, 12)
    durations = [draw.randint(5, 400) * 1e-4 for _ in range(warmup + repeats + 3)]
    durations[0] = draw.randint(2, 9) * 0.1  # a slow first call
    durations[warmup + draw.randint(0, repeats - 1)] += draw.randint(1, 3)  # one slow timed call
    clock = _Clock(durations, device == "cuda")
    args = [draw.randn(draw.randint(1, 3)) for _ in range(draw.randint(0, 2))]
    undo = _patched(ns, [(time, "perf_counter", clock.perf_counter), (torch.cuda, "synchronize", clock.synchronize)])
    try:
        with forbidden(calls=CUDA_SYNCS) as seen:
            got = outcome(ns["bench_median_ms"], clock.fn, *args, device=device, warmup=warmup, repeats=repeats)
    finally:
        _restore(undo)
    return {"returned": float(got) if isinstance(got, float) else got, "calls": clock.calls, "args": clock.args,
            "cpu_syncs": clock.syncs if device == "cpu" else None, "real_syncs": seen.violations}


@probe("test_bench_median_ms")
def bench_median_ms(ns: Namespace, draw: Draw) -> list:
    """bench_median_ms: calls, warm-up, median in ms, CUDA synchronisation (on a simulated clock)"""
    devices = ["cpu", "cuda"] * 4
    draw.random.shuffle(devices)
    return [_bench_case(ns, draw, device) for device in devices]
