"""Probes of lab_deployment: each drives one exercise on inputs and models drawn for this grading run.

Exporting and compiling are slow, so each probe exports a few small models and then runs what was
exported on many drawn inputs (compiles use the ``eager`` backend: Dynamo traces, nothing is generated).
The serving probe trains the digits CNN for one epoch (a fraction of a second) and exports it once.
The benchmark probe runs the student's timer against a simulated clock (``time.perf_counter`` and ``torch.cuda.synchronize`` replaced for the duration of the call):
the timed function "takes" drawn durations, so the observation is exact and does not depend on the
load of the grading machine.
"""

import linecache
import os
import tempfile
import time
from collections.abc import Callable

import onnxruntime
import torch
import torch._dynamo

from graders.inside.probing import Draw, Namespace, outcome, probe
from graders.inside.rules import forbidden
from labutils import digits

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


class _Pair(torch.nn.Module):
    """Scores x[i] against y[2i] and y[2i+1] (the lab's PairScorer, with drawn weights)."""

    def __init__(self, draw: Draw, features: int) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(features, features)
        with torch.no_grad():
            for p in self.proj.parameters():
                p.copy_(draw.randn(*p.shape))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        q = self.proj(x)
        return (q * y[0::2]).sum(dim=1) - (q * y[1::2]).sum(dim=1)


def _pair_case(ns: Namespace, draw: Draw, smallest: bool = False) -> dict:
    """Export a drawn pair model with a drawn bound; run it inside, at and past the bound, with bad y.
    ``smallest``: the example batch is the lower bound, 2."""
    features = draw.randint(2, 7)
    net = _Pair(draw, features).eval()
    max_batch = draw.randint(6, 30)
    b0 = 2 if smallest else draw.randint(2, max_batch - 1)
    program = ns["export_pair"](net, draw.randn(b0, features), draw.randn(2 * b0, features), max_batch)
    obs: dict = {"type": type(program).__name__}
    module = outcome(lambda: program.module())
    inside = [2, 3, max_batch - 1, max_batch, draw.randint(4, max_batch - 2)]
    obs["inside"] = [outcome(module, draw.randn(b, features), draw.randn(2 * b, features)) for b in inside]
    obs["below"] = outcome(module, draw.randn(1, features), draw.randn(2, features))
    obs["past"] = [outcome(module, draw.randn(b, features), draw.randn(2 * b, features))
                   for b in (max_batch + 1, max_batch + draw.randint(2, 20))]
    b = draw.randint(2, max_batch - 1)
    obs["bad_y"] = [outcome(module, draw.randn(b, features), draw.randn(n, features)) for n in (2 * b + 1, 2 * b + 2)]
    obs["other_features"] = outcome(module, draw.randn(b, features + 1), draw.randn(2 * b, features + 1))
    obs["range_constraints"] = outcome(lambda: sorted((int(r.lower), int(r.upper))
                                                      for r in program.range_constraints.values()))
    return obs


@probe("test_export_pair",
       clauses={"returns the ExportedProgram of model(x, y)": "_pair_case(ns, draw)",
                "B any value from 2 to max_batch inclusive, both ends": "_pair_case(ns, draw)",
                "a batch past max_batch (or below 2) rejected": "_pair_case(ns, draw)",
                "y with a row count other than 2 * B rejected; the feature dim fixed": "_pair_case(ns, draw)",
                "an example batch at the lower bound": "smallest=True",
                "the model left as it was": "contracts"})
def export_pair(ns: Namespace, draw: Draw) -> list:
    """export_pair: the program at, inside and past both bounds, with a y of the wrong length, and its ranges"""
    return [_pair_case(ns, draw) for _ in range(2)] + [_pair_case(ns, draw, smallest=True)]


def _ort_outputs(path: str, inputs: list[torch.Tensor]) -> list:
    """Run the ONNX file at ``path`` in onnxruntime on each input (or the error it raised)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()  # the sandbox's one thread: no idle spinning
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    dims = [type(d).__name__ for d in session.get_inputs()[0].shape]
    return [dims] + [outcome(lambda x=x: torch.from_numpy(session.run(None, {name: x.numpy()})[0])) for x in inputs]


class _ExportSkew(torch.nn.Module):
    """``net``, changed only when exported: the logits roll by one class in rows whose first feature is
    positive (so every such row's decision changes, and about half of all rows agree), plus
    ``shift`` * max|row| (the difference grows with the input, so the largest-scale batch dominates the
    maximum, whatever float rounding the CPU does; a negative shift lowers every logit, so only the
    absolute difference sees it)."""

    def __init__(self, net: torch.nn.Module, shift: float = 1e-3) -> None:
        super().__init__()
        self.net = net
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.net(x)
        if torch.compiler.is_exporting():
            y = torch.where(x[:, :1] > 0, y.roll(1, dims=1), y) + self.shift * x.abs().amax(dim=1, keepdim=True)
        return y


@probe("test_onnx_parity", rtol=1e-4, atol=1e-6,
       clauses={"exported to ONNX at path, a dynamic batch dim (the file run at other batch sizes)": "file_outputs",
                "inputs[0] is the example, the other inputs have other batch sizes": "sizes = [draw.choice([4, 8])]",
                "run in onnxruntime": "forbidden(count=ORT_RUNS)",
                "max |onnxruntime - eager| over all inputs, a Python float": "scales[largest] = 1000.0",
                "the share of all rows of all inputs with the same argmax, a Python float": "_agreeing_in_different_shares",
                "one input only, with rows both ways": "one_mixed_batch",
                "an example of one row": "one_row_example",
                "the absolute difference (an export that lowers every logit)": "shift=-1e-3",
                "the model and inputs left as they were": "contracts"})
def onnx_parity(ns: Namespace, draw: Draw) -> dict:
    """onnx_parity: max |diff| and argmax agreement over all inputs (run in onnxruntime, a one-row example too), and the file at other batch sizes"""
    n_in = draw.randint(8, 32)
    net = _ExportSkew(_mlp(draw, n_in, draw.randint(3, 10), draw.randint(16, 48))).eval()
    sizes = [draw.choice([4, 8])] + [draw.choice([1, 2, 3, 5, 6, 7, 9, 10, 11, 13]) for _ in range(draw.randint(2, 3))]
    scales = [draw.choice([0.5, 1.0])] + [draw.choice([1.0, 2.0, 100.0]) for _ in sizes[1:]]
    largest = draw.randint(1, len(sizes) - 1)  # never the example (inputs[0])
    scales[largest] = 1000.0
    inputs = _agreeing_in_different_shares(draw, [draw.randn(n, n_in) * s for n, s in zip(sizes, scales, strict=True)],
                                           largest)
    others = [draw.randn(n, n_in) for n in (1, draw.randint(10, 40))]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"net{draw.randint(0, 10**6)}.onnx")
        with forbidden(count=ORT_RUNS) as seen:
            got = ns["onnx_parity"](net, inputs, path)
        exists = os.path.exists(path)
        file_outputs = outcome(_ort_outputs, path, others) if exists else None
        # One batch whose rows split both ways (row 0 changes class when exported, row 1 does not):
        # agreement is strictly between 0 and 1 per row, never a whole batch at once.
        mixed = draw.randn(draw.randint(2, 6), n_in)
        mixed[0, 0], mixed[1, 0] = mixed[0, 0].abs() + 0.1, -mixed[1, 0].abs() - 0.1
        one_batch = outcome(ns["onnx_parity"], net, [mixed], os.path.join(tmp, "mixed.onnx"))
        # An example of one row (the smallest batch a dynamic dim takes), then a larger batch, where no row
        # changes class once exported: agreement 1 and a maximum difference far below 1 (only the
        # -1e-3 * max|row| the export adds: every difference negative), so a running maximum that does not
        # start at 0, and a maximum of the signed difference, show.
        single, larger = draw.randn(1, n_in), draw.randn(draw.randint(2, 9), n_in)
        for x in (single, larger):
            x[:, 0] = -x[:, 0].abs() - 0.1
        lowered = _ExportSkew(net.net, shift=-1e-3).eval()
        one_row_example = outcome(ns["onnx_parity"], lowered, [single, larger], os.path.join(tmp, "single.onnx"))
    return {"returned": _pair(got), "one_mixed_batch": _pair(one_batch), "one_row_example": _pair(one_row_example),
            "file_exists": exists, "file_outputs": file_outputs, "ran_onnxruntime": bool(seen.ops)}


def _agreeing_in_different_shares(draw: Draw, inputs: list[torch.Tensor], largest: int) -> list[torch.Tensor]:
    """``inputs`` with the first feature's sign set row by row (a positive row changes class once exported).

    The share of agreeing rows over all inputs then differs by at least 0.01 (100 times the probe's rtol)
    from the mean of the batches' shares and from the first batch's share, and at least one row of the
    ``largest``-scale batch changes class, so the maximum difference lies far above the example batch's: a
    solution that averages per batch, or measures the example batch only, never matches by chance."""
    sizes = [len(x) for x in inputs]
    for _ in range(1000):
        changed = [draw.randint(1 if i == largest else 0, n) for i, n in enumerate(sizes)]
        shares = [(n - k) / n for n, k in zip(sizes, changed, strict=True)]
        overall = sum(n - k for n, k in zip(sizes, changed, strict=True)) / sum(sizes)
        if min(abs(overall - sum(shares) / len(shares)), abs(overall - shares[0])) >= 0.01:
            break
    else:
        raise AssertionError(f"no split of batches {sizes} tells the averages apart")
    for x, k in zip(inputs, changed, strict=True):
        rows = draw.random.sample(range(len(x)), k)
        x[:, 0] = -x[:, 0].abs() - 0.1
        x[rows, 0] = -x[rows, 0]
    return inputs


def _pair(got: object) -> object:
    """onnx_parity's answer as two floats, or what it was instead (a list of two is the pair too: the lab's
    test unpacks it the same way)."""
    if isinstance(got, (tuple, list)) and len(got) == 2:
        return tuple(float(v) if isinstance(v, float) else {"not a float": type(v).__name__} for v in got)
    return {"returned": type(got).__name__}


def _breaking_fn(draw: Draw, trailing: bool, grad_mode_break: bool = False, breaks: bool = True) -> Callable:
    """A function with a drawn sequence of explicit, print, data-dependent and grad-mode-dependent graph
    breaks, defined a drawn number of lines into its source (so a line number of the file is not one of
    the function).

    ``trailing``: one more break at the end, followed by nothing but ``return``. ``grad_mode_break``: one of
    the breaks is a print that runs only while grad mode is on (so whether it breaks depends on the
    caller's mode, which ``explain`` must run ``fn`` under). ``breaks=False``: no break in the body (the
    trailing one aside).
    """
    lines = [f"# line {i + 1} of the file" for i in range(draw.randint(2, 12))]
    lines += ["def fn(x, w):", "    y = torch.sin(x) * w"]
    kinds = [draw.randint(0, 3) for _ in range(draw.randint(1, 4))] if breaks else []
    if grad_mode_break:
        kinds.insert(draw.randint(0, len(kinds)), 3)
    for kind in kinds:
        if kind == 0:
            lines.append("    torch._dynamo.graph_break()")
        elif kind == 1:
            lines += ["    if y.sum() > 0:", f"        y = y + {draw.randint(1, 5)}"]
        elif kind == 2:
            lines.append("    print(end='')")
        else:
            lines += ["    if torch.is_grad_enabled():", "        print(end='')"]
        for _ in range(draw.randint(1, 2)):
            lines.append(f"    y = y * {draw.randint(2, 5)}")
    if trailing:
        lines.append(draw.choice(["    torch._dynamo.graph_break()", "    print(end='')"]))
    lines.append("    return y")
    scope = {"torch": torch}
    source, filename = "\n".join(lines) + "\n", f"colleague_{draw.randint(0, 10**6)}.py"
    # the colleague's file, as linecache holds a real one: inspect.getsourcelines(fn) works as on a notebook function
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), scope)  # noqa: S102
    return scope["fn"]


@probe("test_graph_break_lines",
       clauses={"the line numbers of fn's breaks in order, def line = 1, fn defined mid-file": "_breaking_fn(draw",
                "every break counted, one followed by nothing but return too": "trailing = [True, True, False",
                "fn runs under the caller's grad mode": "torch.set_grad_enabled(grad_on)",
                "a function with no break at all: []": "breaks=False",
                "grad mode and the rest left as found": "contracts"})
def graph_break_lines(ns: Namespace, draw: Draw) -> list:
    """graph_break_lines on functions with explicit, print, data-dependent, grad-mode and trailing breaks, defined mid-file"""
    trailing = [True, True, False, False, draw.choice([True, False])]
    draw.random.shuffle(trailing)
    # (trailing break, a break only under grad mode, the caller's grad mode): the grad-mode break is
    # always there twice, once called with grad mode on (it breaks) and once off (it does not)
    plans = [(t, i < 2, i != 1) for i, t in enumerate(trailing)]
    cases = []
    for ends_with_break, grad_mode_break, grad_on in plans:
        fn = _breaking_fn(draw, ends_with_break, grad_mode_break)
        x, w = draw.randn(draw.randint(2, 9)), draw.randn(1)
        with torch.set_grad_enabled(grad_on):
            cases.append(outcome(ns["graph_break_lines"], fn, x, w))
    fn = _breaking_fn(draw, False, breaks=False)
    cases.append(outcome(ns["graph_break_lines"], fn, draw.randn(draw.randint(2, 9)), draw.randn(1)))
    torch._dynamo.reset()
    return cases


def _range_inputs(draw: Draw) -> list[torch.Tensor]:
    """2-D inputs of drawn shapes, one and many rows and columns, float32 and float64, and a transposed
    (non-contiguous) view. Every input with more than one row has a column count other than its row
    count (an (N, D) kernel that confuses the two then gets a shape wrong)."""
    n = draw.randint(2, 9)
    shapes = [(1, 1), (1, draw.randint(2, 6)), (draw.randint(2, 9), 1), (n, draw.choice([d for d in range(2, 10) if d != n]))]
    found = [draw.randn(*s) for s in shapes]
    rows = draw.randint(2, 6)
    found.append(draw.randn(draw.randint(rows + 1, 8), rows).t())
    found.append(draw.randn(rows, rows + draw.randint(1, 4), dtype=torch.float64))
    return found


@probe("test_row_range",
       clauses={"(N, D) -> a new (N, 2) tensor: per row [min, max]": "outcome(op, x) for x in inputs",
                "N >= 1 and D >= 1: one and many rows and columns": "_range_inputs(draw)",
                "float32 or float64, the same dtype out": "_range_inputs(draw)",
                "a fake kernel: fullgraph compile on a symbolic N": "fullgraph=True, dynamic=True",
                "torch.export traces through the op": "torch.export.export",
                "the fake kernel's shape, dtype and device follow the input's (a meta input)": 'device="meta"',
                "mutates_args=(): x left unchanged": "contracts",
                "a valid custom op": "opcheck"})
def row_range(ns: Namespace, draw: Draw) -> dict:
    """row_range: values (float32/64, 1 and many rows/columns), a fullgraph compile on symbolic sizes, opcheck, export"""
    op = ns["row_range"]
    inputs = _range_inputs(draw)
    obs: dict = {"values": [outcome(op, x) for x in inputs]}
    k = draw.randint(1, 4)
    weight = draw.randn(2, k)

    def use(t: torch.Tensor) -> torch.Tensor:  # shapes after the op matter: (N, 2) @ (2, k)
        r = op(t * 2)
        return r @ weight.to(t.dtype) + (r[:, 1:] - r[:, :1])

    torch._dynamo.reset()
    compiled = torch.compile(use, backend="eager", fullgraph=True, dynamic=True)
    obs["compiled"] = [outcome(compiled, x) for x in inputs]
    metas = [torch.empty(draw.randint(1, 9), draw.randint(1, 5), device="meta", dtype=dtype)
             for dtype in (torch.float32, torch.float64)]
    obs["meta"] = [outcome(lambda m=m: (tuple(op(m).shape), str(op(m).dtype), str(op(m).device))) for m in metas]
    torch._dynamo.reset()
    obs["opcheck"] = [outcome(lambda x=x: torch.library.opcheck(op, (x,)) and None) for x in (inputs[2], inputs[-1])]

    class Use(torch.nn.Module):
        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return use(t)

    cols = inputs[3].shape[1]
    exported = outcome(torch.export.export, Use(), (inputs[3],), dynamic_shapes=({0: torch.export.Dim("n", min=1, max=64)},))
    if isinstance(exported, torch.export.ExportedProgram):
        program = exported.module()
        obs["exported"] = [outcome(program, draw.randn(n, cols)) for n in (1, draw.randint(2, 64))]
    else:
        obs["exported"] = exported
    torch._dynamo.reset()
    return obs


@probe("test_serve",
       clauses={"one int64 label tensor (n_i,) per request, in request order": "_per_request(answers)",
                "ceil(total / max_batch) calls, none above max_batch": "within_bound",
                "n_i may be 0": "[0, 1, 0]",
                "exactly one full call; one past it": "[k, max_batch - k], [max_batch, 1]",
                "a request larger than max_batch (three calls)": "[2 * max_batch + 1]",
                "many small requests packed in one call": "[1, 1, 1]",
                "no image at all: no call": "[x[:0]] * draw.randint(1, 3)",
                "the requests left as they were": "contracts"})
def serve(ns: Namespace, draw: Draw) -> list:
    """serve: labels of the trained digits CNN on test-split requests (empty, small, larger than the bound), calls made"""
    model, splits = digits.trained(epochs=1, seed=draw.randint(0, 3))
    max_batch = draw.randint(8, 40)
    program = torch.export.export(model.eval(), (splits.test.x[:4],),
                                  dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=max_batch)},))
    served = program.module()
    calls: list[int] = []

    def predict_batch(images: torch.Tensor) -> torch.Tensor:
        calls.append(int(images.shape[0]))
        return served(images)

    x = splits.test.x
    observed = []
    k = draw.randint(1, max_batch - 1)
    fixed = [[0, 1, 0], [k, max_batch - k], [max_batch, 1],  # one image in all; exactly one full call; one past it
             [2 * max_batch + 1], [1, 1, 1]]
    drawn = [[draw.choice([0, 1, 2, 3, 5, max_batch - 1, max_batch, max_batch + 1, 2 * max_batch + 3])
              for _ in range(draw.randint(1, 6))] for _ in range(3)]
    for sizes in fixed + drawn:
        while sum(sizes) > len(x):
            sizes.pop()
        start = draw.randint(0, len(x) - sum(sizes))
        requests = list(x[start:start + sum(sizes)].split(sizes))
        calls.clear()
        answers = outcome(ns["serve"], predict_batch, requests, max_batch)
        observed.append({"answers": _per_request(answers), "calls": len(calls),
                         "within_bound": all(n <= max_batch for n in calls)})
    calls.clear()
    empty = outcome(ns["serve"], predict_batch, [x[:0]] * draw.randint(1, 3), max_batch)
    observed.append({"empty": _per_request(empty), "calls": len(calls)})
    return observed


def _per_request(answers: object) -> object:
    """serve's answer as a list: "one tensor per request" holds for any list or tuple of them (``torch.split``
    returns a tuple); anything else stays as it is."""
    return list(answers) if isinstance(answers, (list, tuple)) else answers


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
    obs: dict = {"eager": [outcome(module, x) for x in inputs],
                 "gradients": [outcome(_scale_gradient, module, x, draw.randn(*shape)) for x in inputs]}
    exported = outcome(torch.export.export, module, (inputs[draw.randint(0, len(inputs) - 1)],))
    if isinstance(exported, torch.export.ExportedProgram):
        obs["higher_order_ops"] = sorted(str(n.target) for n in exported.graph.nodes
                                         if isinstance(n.target, torch._ops.HigherOrderOperator))
        program = exported.module()
        obs["exported"] = [outcome(program, x) for x in inputs]
    else:
        obs["export"] = exported
    return obs


def _scale_gradient(module: torch.nn.Module, x: torch.Tensor, grad_out: torch.Tensor) -> list:
    """The module's output and the gradient it passes back to ``x`` (a layer in a network trains through
    both branches: the rescaled one depends on ``x`` through its peak too; the kept one is the identity)."""
    leaf = x.clone().requires_grad_()
    y = module(leaf)
    y.backward(grad_out)
    return [y.requires_grad, leaf.grad]


@probe("test_SafeScale",
       clauses={"rescaled so the largest magnitude equals limit when max |x| > limit": "_scale_case(ns, draw)",
                "x unchanged (a new tensor) otherwise, exactly at the limit too": "_scale_case(ns, draw)",
                "torch.cond: a cond node in the exported graph, the branch picked at run time": "_scale_case(ns, draw)",
                "gradients through both branches": "_scale_case(ns, draw)",
                "limit defaults to 1.0": 'ns["SafeScale"]()',
                "x of any shape: 1-d and 3-d": "(draw.randint(2, 9),)",
                "x left as it was": "contracts"})
def safe_scale(ns: Namespace, draw: Draw) -> list:
    """SafeScale: eager and exported outputs on peaks above, below and at the limit, its gradients; a cond in the graph"""
    cases = [_scale_case(ns, draw) for _ in range(2)]
    module = ns["SafeScale"]().eval()  # the default limit, 1.0
    for shape in ((draw.randint(2, 9),), (2, draw.randint(1, 3), 3)):
        cases.append({"shape": shape, "eager": [outcome(module, x) for x in _scale_inputs(draw, 1.0, shape)]})
    return cases


class _Clock:
    """A simulated clock: the timed function takes drawn durations; CUDA work waits for synchronize."""

    def __init__(self, durations: list[float], cuda: bool) -> None:
        self.now, self.pending, self.cuda = 1000.0, 0.0, cuda
        self.durations, self.calls, self.syncs, self.args, self.grad_modes = durations, 0, 0, [], []

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
        self.grad_modes.append(torch.is_grad_enabled())  # fn runs as the caller would run it (a training step needs grad)
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


def _bench_case(ns: Namespace, draw: Draw, device: str, forced: str | None = None) -> dict:
    """Benchmark a simulated function with drawn per-call durations on ``device``. ``forced``:
    ``"one_timed"`` (warm-up calls, then one timed call: on CUDA the warm-up's queued work must not be
    in it), ``"even"`` (an even number of timed calls: the median is the mean of the two middle ones) or
    ``"defaults"`` (called with ``fn`` and its arguments only: the signature's device, warmup and repeats)."""
    warmup, repeats = draw.randint(0, 4), draw.randint(1, 12)
    if forced == "one_timed":
        warmup, repeats = draw.randint(1, 4), 1
    elif forced == "even":  # at least 4: with 2 the mean of the timed calls is their median
        repeats = 2 * draw.randint(2, 6)
    elif forced == "defaults":  # the docstring's signature: device="cpu", warmup=3, repeats=20
        warmup, repeats = 3, 20
    elif forced == "no_warmup":
        warmup = 0
    # distinct durations: two equal middle calls would make every median rule agree
    durations = [ticks * 1e-4 for ticks in draw.random.sample(range(5, 401), warmup + repeats + 3)]
    durations[0] = draw.randint(2, 9) * 0.1  # a slow first call
    durations[warmup + draw.randint(0, repeats - 1)] += draw.randint(1, 3)  # one slow timed call
    clock = _Clock(durations, device == "cuda")
    args = [draw.randn(draw.randint(1, 3)) for _ in range(draw.randint(0, 2))]
    undo = _patched(ns, [(time, "perf_counter", clock.perf_counter), (torch.cuda, "synchronize", clock.synchronize)])
    try:
        with forbidden(calls=CUDA_SYNCS) as seen:
            settings = {} if forced == "defaults" else {"device": device, "warmup": warmup, "repeats": repeats}
            got = outcome(ns["bench_median_ms"], clock.fn, *args, **settings)
    finally:
        _restore(undo)
    return {"returned": float(got) if isinstance(got, float) else got, "calls": clock.calls, "args": clock.args,
            "grad_modes": clock.grad_modes,
            "cpu_syncs": clock.syncs if device == "cpu" else None, "real_syncs": seen.violations}


@probe("test_bench_median_ms",
       clauses={"warmup untimed calls, then repeats timed calls, exactly warmup + repeats calls": "_bench_case(ns, draw, device)",
                "no warm-up at all (warmup 0)": '"no_warmup"',
                "one timed call after the warm-up": '"one_timed"',
                "the median in ms; an even number of timed calls": '"even"',
                "synchronize before starting and before stopping each clock on cuda, never on cpu": '("cuda", "one_timed")',
                "the defaults device cpu, warmup 3, repeats 20": '"defaults"',
                "fn called with its arguments, under the caller's grad mode": "_bench_case(ns, draw, *f)"})
def bench_median_ms(ns: Namespace, draw: Draw) -> list:
    """bench_median_ms: calls, warm-up, median in ms, CUDA synchronisation (on a simulated clock)"""
    devices = ["cpu", "cuda"] * 4
    draw.random.shuffle(devices)
    forced = [("cuda", "no_warmup"), ("cpu", "no_warmup"),
              ("cuda", "one_timed"), ("cpu", "one_timed"), ("cuda", "even"), ("cpu", "even"), ("cpu", "defaults")]
    return [_bench_case(ns, draw, device) for device in devices] + [_bench_case(ns, draw, *f) for f in forced]
