"""labutils.memory: per-category memory of a training step, checked against analytic counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from labutils import memory
from labutils.memory import MemoryTracker

BATCH, D_IN, HIDDEN, CLASSES = 64, 96, 128, 10
FLOAT = 4


def make_mlp(layers: int = 3, seed: int = 0) -> nn.Sequential:
    """Linear(D_IN, H), ReLU, (Linear(H, H), ReLU) * (layers - 2), Linear(H, CLASSES)."""
    torch.manual_seed(seed)
    modules: list[nn.Module] = [nn.Linear(D_IN, HIDDEN), nn.ReLU()]
    for _ in range(layers - 2):
        modules += [nn.Linear(HIDDEN, HIDDEN), nn.ReLU()]
    return nn.Sequential(*modules, nn.Linear(HIDDEN, CLASSES))


def make_batch(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(BATCH, D_IN, generator=gen), torch.randint(0, CLASSES, (BATCH,), generator=gen)


def param_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def saved_activation_bytes(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> int:
    """Reference: unique storages autograd saves for backward, minus parameters and the batch."""
    excluded = {t.untyped_storage().data_ptr() for t in [*model.parameters(), x, y]}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        F.cross_entropy(model(x), y)
    return sum(n for ptr, n in saved.items() if ptr not in excluded)


def assert_within(measured: int, expected: int, what: str, rel: float = 0.05) -> None:
    assert expected > 0
    assert abs(measured - expected) <= rel * expected, (
        f"{what}: measured {measured} bytes, expected {expected} (within {rel:.0%})"
    )


@pytest.fixture(scope="module")
def adam_step() -> tuple[nn.Module, memory.MemoryTimeline]:
    model = make_mlp()
    x, y = make_batch()
    return model, memory.track_step(model, torch.optim.Adam(model.parameters()), x, y)


def test_parameters_and_gradients_match_parameter_bytes(adam_step) -> None:
    model, timeline = adam_step
    assert_within(timeline.peak("parameters"), param_bytes(model), "parameters")
    assert_within(timeline.peak("gradients"), param_bytes(model), "gradients")


def test_adam_state_is_two_tensors_per_parameter(adam_step) -> None:
    model, timeline = adam_step
    assert_within(timeline.peak("optimizer state"), 2 * param_bytes(model), "Adam exp_avg + exp_avg_sq")


def test_activations_match_saved_tensors_and_the_analytic_count(adam_step) -> None:
    model, timeline = adam_step
    x, y = make_batch()
    assert_within(timeline.peak("activations"), saved_activation_bytes(model, x, y), "saved tensors")
    # ReLU outputs (read by the next Linear and by ReLU's backward) + log_softmax output.
    analytic = BATCH * (2 * HIDDEN + CLASSES) * FLOAT
    assert_within(timeline.peak("activations"), analytic, "analytic activations")


def test_phases_in_order_and_when_each_category_appears(adam_step) -> None:
    _, timeline = adam_step
    phases = [name for name, _, _ in timeline.phases]
    assert phases == ["start", "forward", "backward", "optimizer", "zero_grad", "end"]
    forward, optimizer = timeline.in_phase("forward"), timeline.in_phase("optimizer")
    assert all(s.by_category["gradients"] == 0 for s in forward), "no gradient exists during forward"
    assert all(s.by_category["optimizer state"] == 0 for s in forward + timeline.in_phase("backward"))
    assert optimizer[-1].by_category["optimizer state"] > 0, "Adam's state appears at step()"
    assert forward[-1].by_category["activations"] == timeline.peak("activations")
    assert timeline.samples[-1].by_category["gradients"] == 0, "zero_grad(set_to_none) frees grads"
    assert timeline.samples[-1].by_category["activations"] == 0, "backward frees saved tensors"
    assert {"addmm", "relu"} <= {s.op.split(".")[0] for s in forward}


def test_sgd_without_momentum_has_no_state_and_momentum_has_one_buffer() -> None:
    x, y = make_batch()
    plain, momentum = make_mlp(), make_mlp()
    t_plain = memory.track_step(plain, torch.optim.SGD(plain.parameters(), lr=0.1), x, y)
    t_mom = memory.track_step(momentum, torch.optim.SGD(momentum.parameters(), lr=0.1, momentum=0.9), x, y)
    assert t_plain.peak("optimizer state") == 0
    assert_within(t_mom.peak("optimizer state"), param_bytes(momentum), "SGD momentum buffers")


def test_warmup_step_makes_state_exist_from_the_start() -> None:
    model = make_mlp()
    x, y = make_batch()
    timeline = memory.track_step(model, torch.optim.Adam(model.parameters()), x, y, warmup_steps=1)
    assert_within(
        timeline.samples[0].by_category["optimizer state"], 2 * param_bytes(model), "state at start"
    )


def test_checkpointing_lowers_activations_and_keeps_gradients() -> None:
    x, y = make_batch()
    plain, ckpt = make_mlp(layers=8), make_mlp(layers=8)
    t_plain = memory.track_step(plain, torch.optim.SGD(plain.parameters(), lr=0.0), x, y)
    t_ckpt = memory.track_step(
        ckpt, torch.optim.SGD(ckpt.parameters(), lr=0.0), x, y, forward=memory.checkpointed(4)
    )
    assert t_ckpt.peak("activations") < 0.8 * t_plain.peak("activations")
    recomputed = [s for s in t_ckpt.in_phase("backward") if s.module.endswith("(recompute)")]
    assert recomputed, "checkpointed segments are recomputed during backward"
    assert not [s for s in t_plain.samples if "(recompute)" in s.module]


def test_checkpointed_forward_gives_the_same_gradients() -> None:
    x, y = make_batch()
    plain, ckpt = make_mlp(layers=4), make_mlp(layers=4)
    F.cross_entropy(plain(x), y).backward()
    F.cross_entropy(memory.checkpointed(2)(ckpt, x), y).backward()
    for p, q in zip(plain.parameters(), ckpt.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad)
    with pytest.raises(TypeError):
        memory.checkpointed(2)(nn.Linear(2, 2), torch.randn(1, 2))


def test_tracking_does_not_change_the_step() -> None:
    x, y = make_batch()
    a, b = make_mlp(), make_mlp()
    opt_a, opt_b = torch.optim.Adam(a.parameters()), torch.optim.Adam(b.parameters())
    memory.track_step(a, opt_a, x, y)
    F.cross_entropy(b(x), y).backward()
    opt_b.step()
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_views_are_not_counted_twice_and_temporaries_are_freed() -> None:
    model = nn.Linear(4, 4)
    x = torch.randn(256, 256)
    tracker = MemoryTracker(model, inputs=(x,))
    with tracker:
        view_t, view_2 = x.t(), x.view(-1)  # noqa: F841 (views of x, no new storage)
        tmp = x * 2
        del tmp
        kept = x + 1  # noqa: F841
    timeline = tracker.timeline
    x_bytes = x.numel() * 4
    other = timeline.series("other")
    assert other[0] == x_bytes, "the batch is 'other' from the start"
    assert max(other) == 2 * x_bytes, "x and x * 2 at most; views add nothing"
    assert other[-1] == 2 * x_bytes, "x * 2 freed, x + 1 kept"
    assert [s.op for s in timeline.samples[1:3]] == ["mul.Tensor", "add.Tensor"]


def test_timeline_data_table_and_plots(tmp_path: Path, adam_step) -> None:
    _, timeline = adam_step
    data = json.loads(json.dumps(timeline.to_dict()))
    assert len(data["samples"]) == len(timeline.samples)
    assert data["peaks"] == timeline.peaks()
    assert all(s.total == sum(s.by_category.values()) for s in timeline.samples)
    assert "optimizer state" in timeline.table()
    figure = timeline.plot()
    assert figure._repr_png_().startswith(b"\x89PNG")
    assert figure.save(tmp_path / "step.svg").read_text().lstrip().startswith("<?xml")
    both = memory.compare({"Adam": timeline, "again": timeline})
    assert len(both.figure.axes) == 3
    with pytest.raises(ValueError):
        memory.compare({})


def test_comparison_shares_one_scale_that_fits_the_largest_step() -> None:
    x, y = make_batch()
    small, large = make_mlp(), make_mlp(layers=6)
    t_small = memory.track_step(small, torch.optim.SGD(small.parameters(), lr=0.1), x, y)
    t_large = memory.track_step(large, torch.optim.Adam(large.parameters()), x, y)
    plot = memory.compare({"large": t_large, "small": t_small})  # the smaller one drawn last
    top = plot.figure.axes[0].get_ylim()[1]
    assert plot.figure.axes[1].get_ylim()[1] == top
    unit = plot.figure.axes[0].get_ylabel().split("(")[1].rstrip(")")
    scale = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[unit]
    assert top * scale >= t_large.peak(), "the largest step must fit on the shared scale"


def test_no_profiler_memory_timeline_and_no_javascript() -> None:
    root = Path(memory.__file__).parent  # the labutils/memory/ package
    source = "".join(p.read_text() for p in sorted(root.glob("*.py")))
    assert "MemoryTracker" in source
    assert "export_memory_timeline" not in source and "torch.profiler" not in source.replace(
        "It does not use ``torch.profiler``", ""
    )
    assert "<script" not in source


@pytest.mark.cuda
def test_cuda_reports_the_allocator(tmp_path: Path) -> None:
    model = make_mlp().cuda()
    x, y = (t.cuda() for t in make_batch())
    snapshot = tmp_path / "step.pickle"
    timeline = memory.track_step(
        model, torch.optim.Adam(model.parameters()), x, y, cuda_snapshot=str(snapshot)
    )
    assert timeline.cuda_stats is not None
    assert timeline.cuda_stats["max_memory_allocated"] >= timeline.peak()
    assert all(s.cuda_allocated is not None for s in timeline.samples)
    assert_within(timeline.peak("optimizer state"), 2 * param_bytes(model), "Adam state on CUDA")
    assert snapshot.stat().st_size > 0


def test_hooks_are_removed_even_when_the_step_fails_and_a_tracker_is_single_use() -> None:
    model = make_mlp()
    x, y = make_batch()
    tracker = MemoryTracker(model, inputs=(x, y))
    with pytest.raises(ZeroDivisionError), tracker:
        F.cross_entropy(model(x), y).backward()
        1 / 0  # noqa: B018
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    assert all(not p._post_accumulate_grad_hooks for p in model.parameters())
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    assert _get_current_dispatch_mode() is None, "the dispatch mode must be popped"
    assert tracker.timeline.peak("gradients") > 0
    with pytest.raises(RuntimeError):
        with tracker:
            pass
