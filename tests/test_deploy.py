"""Tests of labutils.deploy, including onnxruntime parity of dynamo-exported ONNX models."""

from __future__ import annotations

import logging
import os
import warnings

import pytest
import torch
import torch._dynamo
from torch.export import Dim
from torch.profiler import ProfilerActivity, profile

from labutils import deploy


class TinyNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class CondGate(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, torch.sin, torch.cos, (x,))


def _with_print(x: torch.Tensor) -> torch.Tensor:
    y = torch.sin(x)
    print("graph break here")
    return y + 1


def _pure(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x).cos() * 2


def _gelu_like(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x**3)))


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


# ---- explain_summary -------------------------------------------------------------------------


@pytest.mark.slow
def test_explain_summary_matches_dynamo_explain() -> None:
    x = torch.randn(8, generator=torch.Generator().manual_seed(0))
    raw = torch._dynamo.explain(_with_print)(x)
    summary = deploy.explain_summary(_with_print, x)
    assert (
        (summary.graph_count, summary.graph_break_count) == (raw.graph_count, raw.graph_break_count) == (2, 1)
    )
    assert len(summary.break_reasons) == len(raw.break_reasons) == 1
    assert 'print("graph break here")' in summary.break_reasons[0]
    assert "\n" not in summary.break_reasons[0]
    assert "graphs: 2" in str(summary)


def test_explain_summary_no_break_and_break_at_end() -> None:
    x = torch.randn(4)
    clean = deploy.explain_summary(_pure, x)
    assert (clean.graph_count, clean.graph_break_count, clean.break_reasons) == (1, 0, [])

    def break_at_end(t: torch.Tensor) -> torch.Tensor:
        y = t * 3
        torch._dynamo.graph_break()
        return y

    end = deploy.explain_summary(break_at_end, x)
    # explain's graph_break_count (graph_count - 1) misses a break with nothing after it.
    assert end.graph_break_count == 0 and len(end.break_reasons) == 1


# ---- compile counters ------------------------------------------------------------------------


def test_compile_counter_sees_automatic_dynamic_shapes() -> None:
    counter = deploy.CompileCounter()
    compiled = torch.compile(_gelu_like, backend=counter)
    for n in (8, 16, 32, 8):
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x), _gelu_like(x))
    assert counter.compiles == 2
    assert counter.input_shapes[0] == [(8,)]
    (second,) = counter.input_shapes[1]
    assert isinstance(second[0], str), f"second compile should be symbolic, got {second}"


def test_compile_counter_static_recompiles_per_shape() -> None:
    counter = deploy.CompileCounter()
    compiled = torch.compile(_gelu_like, backend=counter, dynamic=False)
    for n in (3, 4, 5):
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x), _gelu_like(x))
    assert counter.compiles == 3
    assert counter.input_shapes == [[(3,)], [(4,)], [(5,)]]


@pytest.mark.slow
def test_aot_graph_counter_counts_forward_and_backward() -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    x, y = torch.randn(5, 4), torch.randn(5, 1)
    counter = deploy.AotGraphCounter()
    torch.nn.functional.mse_loss(torch.compile(net, backend=counter.backend)(x), y).backward()
    compiled_grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    torch.nn.functional.mse_loss(net(x), y).backward()
    for got, want in zip(compiled_grads, (p.grad for p in net.parameters()), strict=True):
        torch.testing.assert_close(got, want)
    assert (counter.forward_graphs, counter.backward_graphs) == (1, 1)


# ---- quiet_onnx_export -------------------------------------------------------------------------


def test_quiet_onnx_export_filters_only_the_upstream_noise() -> None:
    logger = logging.getLogger("torch.onnx._internal.exporter._registration")
    before = logger.level
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with deploy.quiet_onnx_export():
            assert logger.level == logging.ERROR
            warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated", FutureWarning, stacklevel=1)
            warnings.warn("something else", FutureWarning, stacklevel=1)
            warnings.warn("`isinstance(treespec, LeafSpec)` as a user warning", UserWarning, stacklevel=1)
    assert logger.level == before
    messages = sorted(str(w.message) for w in caught)
    assert messages == ["`isinstance(treespec, LeafSpec)` as a user warning", "something else"]


# ---- onnxruntime parity ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_onnx(tmp_path_factory):
    torch.manual_seed(0)
    model = TinyNet().eval()
    path = os.fspath(tmp_path_factory.mktemp("onnx") / "tiny.onnx")
    with deploy.quiet_onnx_export():
        program = torch.onnx.export(
            model,
            (torch.randn(4, 16),),
            path,
            dynamo=True,
            verbose=False,
            dynamic_shapes={"x": {0: Dim("batch", min=1, max=256)}},
        )
    return model, path, program


@pytest.mark.slow
def test_onnxruntime_parity_over_batch_sizes(tiny_onnx) -> None:
    model, path, program = tiny_onnx
    session = deploy.ort_session(path)
    ((name, shape),) = [(i.name, i.shape) for i in session.get_inputs()]
    assert isinstance(shape[0], str) and shape[1] == 16, f"batch dim should be symbolic: {shape}"
    assert max(o.version for o in program.model_proto.opset_import if o.domain == "") >= 18
    gen = torch.Generator().manual_seed(1)
    for n in (1, 7, 256):
        x = torch.randn(n, 16, generator=gen)
        (out,) = deploy.ort_run(session, x)
        assert out.shape == (n, 4) and out.dtype == torch.float32
        with torch.no_grad():
            torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_ort_session_from_bytes_and_input_count_check(tiny_onnx) -> None:
    model, _, program = tiny_onnx
    session = deploy.ort_session(program.model_proto.SerializeToString())
    x = torch.randn(3, 16)
    with torch.no_grad():
        torch.testing.assert_close(deploy.ort_run(session, x)[0], model(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="takes 1 inputs"):
        deploy.ort_run(session, x, x)


@pytest.mark.slow
def test_ort_session_computes_on_as_many_threads_as_torch(tiny_onnx) -> None:
    _, path, _ = tiny_onnx
    before = torch.get_num_threads()
    try:
        for threads in (1, 3):
            torch.set_num_threads(threads)
            assert deploy.ort_session(path).get_session_options().intra_op_num_threads == threads
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_static_onnx_export_rejects_other_batch_sizes(tmp_path) -> None:
    torch.manual_seed(0)
    model = TinyNet().eval()
    path = os.fspath(tmp_path / "static.onnx")
    with deploy.quiet_onnx_export():
        torch.onnx.export(model, (torch.randn(4, 16),), path, dynamo=True, verbose=False)
    session = deploy.ort_session(path)
    assert session.get_inputs()[0].shape == [4, 16]
    with pytest.raises(Exception, match="(?i)dimension|shape"):
        deploy.ort_run(session, torch.randn(5, 16))


@pytest.mark.slow
def test_torch_cond_exports_to_onnx_if_with_parity() -> None:
    with deploy.quiet_onnx_export():
        program = torch.onnx.export(CondGate().eval(), (torch.randn(5),), dynamo=True, verbose=False)
    assert "If" in [node.op_type for node in program.model_proto.graph.node]
    session = deploy.ort_session(program.model_proto.SerializeToString())
    for x in (torch.ones(5), -torch.ones(5), torch.randn(5, generator=torch.Generator().manual_seed(2))):
        want = torch.sin(x) if x.sum() > 0 else torch.cos(x)
        torch.testing.assert_close(deploy.ort_run(session, x)[0], want)


# ---- top_ops ---------------------------------------------------------------------------------


def test_top_ops_sorted_and_sums_to_total() -> None:
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            torch.relu(a @ b).sum()
    ops = deploy.top_ops(prof, n=2)
    assert ops[-1][0] == "other" and len(ops) == 3
    head = [ms for _, ms in ops[:-1]]
    assert head == sorted(head, reverse=True)
    total = sum(e.self_cpu_time_total for e in prof.key_averages()) / 1e3
    assert sum(ms for _, ms in ops) == pytest.approx(total, rel=1e-6)
    names = {name for name, _ in deploy.top_ops(prof, n=50)}
    assert "aten::mm" in names


# ---- LatencyTable ----------------------------------------------------------------------------


def test_latency_table_speedups_and_markdown() -> None:
    table = deploy.LatencyTable(title="t")
    table.add("eager", 4.0)
    table.add("compiled", 2.0, note="inductor")
    table.add("onnxruntime", 8.0)
    assert table.speedups() == {"eager": 1.0, "compiled": 2.0, "onnxruntime": 0.5}
    md = table.to_markdown()
    assert "| compiled | 2.000 | 2.00x | inductor |" in md and md == repr(table) == table._repr_markdown_()
    table.baseline = "onnxruntime"
    assert table.speedups()["eager"] == 2.0
    with pytest.raises(ValueError):
        table.add("broken", 0.0)
    assert deploy.LatencyTable().speedups() == {}


# ---- quiet_torchao_import ----------------------------------------------------------------------


def test_quiet_torchao_import_drops_only_the_import_noise(caplog: pytest.LogCaptureFixture) -> None:
    torchao_log, pytree_log = logging.getLogger("torchao"), logging.getLogger("torch.utils._pytree")
    with caplog.at_level(logging.WARNING):
        with deploy.quiet_torchao_import():
            torchao_log.warning("Failed to load /x/site-packages/torchao/_C_mxfp8.cpython-310.so: nope")
            pytree_log.warning("<enum 'KernelPreference'> is an Enum subclass and is now natively supported")
            torchao_log.warning("Failed to quantize layer fc1")
        torchao_log.warning("Failed to load /x/site-packages/torchao/_C_cutlass.so: after the block")
    assert [r.getMessage() for r in caplog.records] == [
        "Failed to quantize layer fc1",
        "Failed to load /x/site-packages/torchao/_C_cutlass.so: after the block",
    ]
    assert not torchao_log.filters and not pytree_log.filters
