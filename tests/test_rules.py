"""graders.inside.rules: each spelling of a forbidden operation is caught where it runs; rule-abiding code is not."""

from __future__ import annotations

import contextlib
import functools
import gc
import subprocess
import sys
import threading
import types
from pathlib import Path

import numpy as np
import pytest
import torch
import torch as T
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils._python_dispatch import _disable_current_modes, _get_current_dispatch_mode_stack, _pop_mode
from torch.utils.data import DistributedSampler

from graders.inside.rules import COLLECTIVES, POINT_TO_POINT, autograd_nodes, collective_methods, forbidden
from labutils.launch import launch

TRANSPOSES = ["aten.transpose", "aten.t", "aten.permute"]


def seen_by(fn, *args, **rules) -> list[str]:
    """The violations :func:`forbidden` reports while ``fn(*args)`` runs."""
    with forbidden(**rules) as seen:
        fn(*args)
    return seen.violations


def as_strided_transpose(t: torch.Tensor, dim0: int, dim1: int) -> torch.Tensor:
    shape, stride = list(t.shape), list(t.stride())
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return torch.as_strided(t, shape, stride, t.storage_offset())


_bound_swapaxes = T.Tensor.swapaxes  # bound before anything could swap the attribute


@pytest.mark.parametrize(
    ("spelling", "op"),
    [
        (lambda t: t.transpose(0, 1), "aten.transpose.int"),
        (lambda t: torch.transpose(t, 0, 1), "aten.transpose.int"),
        (lambda t: torch.Tensor.transpose(t, 0, 1), "aten.transpose.int"),
        (lambda t: torch.ops.aten.transpose.int(t, 0, 1), "aten.transpose.int"),
        (lambda t: getattr(torch.ops.aten, "trans" + "pose").int(t, 0, 1), "aten.transpose.int"),
        (lambda t: t.mT, "aten.transpose.int"),
        (lambda t: t.mH, "aten.transpose.int"),
        (lambda t: t.adjoint(), "aten.transpose.int"),
        (lambda t: T.swapaxes(t, 0, 1), "aten.transpose.int"),
        (lambda t: t.swapdims(0, 1), "aten.transpose.int"),
        (lambda t: _bound_swapaxes(t, 0, 1), "aten.transpose.int"),
        (lambda t: t.permute(1, 0, 2), "aten.permute.default"),
        (lambda t: t.movedim(0, 1), "aten.permute.default"),
        (lambda t: torch.moveaxis(t, 0, 1), "aten.permute.default"),
        (lambda t: t[0].T, "aten.permute.default"),
        (lambda t: t[0].t(), "aten.t.default"),
        (lambda t: next(map(torch.Tensor.transpose, [t], [0], [1])), "aten.transpose.int"),  # called from C
        (lambda t: torch.vmap(lambda m: m.t())(t), "aten.transpose.int"),
        (lambda t: torch.compile(lambda a: a.transpose(0, 1), backend="eager")(t), "aten.transpose.int"),
    ],
)
def test_every_spelling_of_a_transpose_is_caught(spelling, op: str) -> None:
    assert op in seen_by(spelling, torch.randn(3, 4, 5), aten=TRANSPOSES)


def test_as_strided_is_not_a_violation_however_spelled() -> None:
    t = torch.randn(5, 6, 7)[1:, ::2]
    for fn in (
        as_strided_transpose,
        lambda t, a, b: t.as_strided(
            (t.shape[1], t.shape[0], t.shape[2]), (t.stride(1), t.stride(0), t.stride(2)), t.storage_offset()
        ),
        lambda t, a, b: torch.ops.aten.as_strided.default(t, (3, 4), (1, 3), 0),
    ):
        assert seen_by(fn, t, 0, 1, aten=[*TRANSPOSES, "aten.unfold", "aten.set_"]) == []


def test_windows_memory_tricks_and_their_names() -> None:
    x = torch.randn(20)
    rules = {
        "aten": ["aten.unfold", "aten.set_"],
        "calls": {"torch.Tensor.numpy": torch.Tensor.numpy, "torch.from_numpy": torch.from_numpy},
    }
    assert seen_by(lambda: x.unfold(0, 4, 2), **rules) == ["aten.unfold.default"]
    assert seen_by(lambda: getattr(type(x).__mro__[1], "un" + "fold")(x, 0, 4, 2), **rules) == [
        "aten.unfold.default"
    ]
    assert seen_by(lambda: torch.empty(0).set_(x.untyped_storage(), 0, (5, 4), (2, 1)), **rules) == [
        "aten.set_.source_Storage_storage_offset"
    ]
    assert seen_by(lambda: torch.from_numpy(np.asarray(x)), **rules) == [
        "torch.Tensor.numpy",
        "torch.from_numpy",
    ]
    assert seen_by(lambda: torch.as_strided(x, (5, 4), (2, 1)), **rules) == []


def pure_broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for back, size in enumerate(reversed(shape)):
            pos = ndim - 1 - back
            if out[pos] == 1:
                out[pos] = size
            elif size not in (1, out[pos]):
                raise ValueError(shapes)
    return tuple(out)


def renamed_copy(fn: types.FunctionType) -> types.FunctionType:
    return types.FunctionType(fn.__code__, fn.__globals__, "innocent", fn.__defaults__, fn.__closure__)


@pytest.mark.parametrize(
    "spelling",
    [
        lambda s: torch.broadcast_shapes(*s),
        lambda s: getattr(torch, "broadcast_" + "shapes")(*s),
        lambda s: torch.functional.broadcast_shapes(*s),
        lambda s: renamed_copy(torch.functional.broadcast_shapes)(*s),
        lambda s: functools.partial(torch.broadcast_shapes)(*s),
        lambda s: list(map(torch.broadcast_shapes, *zip(s, strict=True))),
    ],
)
def test_broadcast_shapes_is_caught_by_its_code_however_reached(spelling) -> None:
    shapes = [(3, 1), (4,)]
    assert "torch.broadcast_shapes" in seen_by(
        spelling, shapes, calls={"torch.broadcast_shapes": torch.broadcast_shapes}
    )
    assert seen_by(spelling, shapes, modules=["torch", "numpy"]) != []


def test_plain_python_rule() -> None:
    rules = {"aten": ["*"], "modules": ["torch", "numpy"]}
    assert seen_by(pure_broadcast, (5, 1, 7), (6, 1), **rules) == []
    assert seen_by(lambda: np.broadcast_shapes((3, 1), (4,)), **rules) == [
        "numpy.lib._stride_tricks_impl.broadcast_shapes"
    ]
    made = seen_by(lambda: torch.broadcast_tensors(torch.empty(3, 1), torch.empty(4)), **rules)
    assert (
        "aten.empty.memory_format" in made and "torch._VariableFunctionsClass.broadcast_tensors" not in made
    )
    with pytest.raises(ValueError):
        with forbidden(**rules):
            pure_broadcast((3, 2), (3,))


class Subsampler(DistributedSampler):
    def __init__(self, n: int) -> None:
        super().__init__(range(n), num_replicas=2, rank=0)


def test_a_class_forbids_each_of_its_methods_also_through_a_subclass() -> None:
    rules = {"calls": {"DistributedSampler": DistributedSampler}}
    assert seen_by(lambda: list(DistributedSampler(range(8), num_replicas=2, rank=1)), **rules) == [
        "DistributedSampler"
    ]
    assert seen_by(lambda: list(iter(Subsampler(8))), **rules) == ["DistributedSampler"]
    assert seen_by(lambda: sorted(range(8))[1::2], **rules) == []


def test_methods_of_c_types_bound_or_not() -> None:
    t = torch.randn(3)
    rules = {"calls": {"numpy": torch.Tensor.numpy, "item": torch.Tensor.item}}
    assert seen_by(t.numpy, **rules) == ["numpy"]
    assert seen_by(torch.Tensor.numpy, t, **rules) == ["numpy"]
    assert seen_by(lambda: t.sum().item(), **rules) == ["item"]
    assert seen_by(lambda: t.sum() * 2, **rules) == []


def test_tampering_is_reported_and_the_recorders_are_restored() -> None:
    t = torch.randn(3, 4)
    assert "tampering: sys.setprofile" in seen_by(sys.setprofile, None)
    assert "tampering: profile hook replaced" in seen_by(sys.setprofile, None)

    def pop_then_transpose() -> None:
        _pop_mode()
        t.transpose(0, 1)

    assert "tampering: dispatch mode removed" in seen_by(pop_then_transpose, aten=TRANSPOSES)

    def blind_transpose() -> None:
        with torch._C._DisableTorchDispatch():
            t.transpose(0, 1)

    assert seen_by(blind_transpose, aten=TRANSPOSES) == ["tampering: Python dispatch key excluded"]
    assert sys.getprofile() is None and threading.getprofile() is None
    assert _get_current_dispatch_mode_stack() == []


def test_context_managers_are_not_tampering_unless_the_submission_disables_the_modes() -> None:
    """``@contextmanager`` gives every function it wraps one ``helper`` code: entering DDP's ``no_sync`` (or
    any context manager) once read as ``_disable_current_modes``. Torch switching modes off inside its own
    code is not tampering either; the submission's own ``with _disable_current_modes():`` still is, however
    it enters the context manager."""
    t = torch.randn(3, 4)
    ddp = types.SimpleNamespace(require_backward_grad_sync=True)  # what DDP.no_sync touches

    def accumulate_without_sync() -> None:
        with DistributedDataParallel.no_sync(ddp):
            t.transpose(0, 1)

    @contextlib.contextmanager
    def quiet():
        yield

    def own_context_manager() -> None:
        with quiet():
            t.transpose(0, 1)

    def print_tensor() -> None:
        str(t)  # torch's _str runs under its own _disable_current_modes()
        t.transpose(0, 1)

    for legitimate in (accumulate_without_sync, own_context_manager, print_tensor):
        assert seen_by(legitimate, aten=TRANSPOSES) == ["aten.transpose.int"], legitimate.__name__
    assert ddp.require_backward_grad_sync

    def blind() -> None:
        with _disable_current_modes():
            t.transpose(0, 1)

    def blind_by_hand() -> None:
        modes = _disable_current_modes()
        modes.__enter__()
        t.transpose(0, 1)
        modes.__exit__(None, None, None)

    def blind_through_an_exit_stack() -> None:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_disable_current_modes())
            t.transpose(0, 1)

    for tampering in (blind, blind_by_hand, blind_through_an_exit_stack):
        assert seen_by(tampering, aten=TRANSPOSES) == [
            "tampering: torch.utils._python_dispatch._disable_current_modes"
        ], tampering.__name__
    assert _get_current_dispatch_mode_stack() == []


def test_clearing_the_report_from_inside_the_window_changes_nothing() -> None:
    t = torch.randn(3, 4)

    def transpose_then_clear_the_callers_report() -> None:
        t.transpose(0, 1)
        for value in sys._getframe(1).f_locals.values():
            if hasattr(value, "found"):
                value.found.clear()

    with forbidden(aten=TRANSPOSES) as seen:
        transpose_then_clear_the_callers_report()
    assert seen.violations == ["aten.transpose.int"]
    assert "tampering: sys.getprofile" in seen_by(sys.getprofile)
    assert "tampering: gc.get_objects" in seen_by(gc.get_objects)


def test_an_outer_profile_function_comes_back() -> None:
    def outer(frame, event, arg) -> None:
        return None

    sys.setprofile(outer)
    try:
        with forbidden():
            pass
        assert sys.getprofile() is outer
    finally:
        sys.setprofile(None)


def test_escapes_to_threads_are_reported() -> None:
    def in_a_thread() -> None:
        worker = threading.Thread(target=lambda: None)
        worker.start()
        worker.join()

    assert "escape: threading.Thread.start" in seen_by(in_a_thread)


def countdown(n: int) -> int:
    return 0 if n == 0 else countdown(n - 1)


def ping(n: int) -> int:
    return 0 if n == 0 else pong(n - 1)


def pong(n: int) -> int:
    return ping(n)


def loop(n: int) -> int:
    while n:
        n -= 1
    return n


def test_recursion_of_submission_code_only() -> None:
    assert seen_by(countdown, 3, recursion=True) == ["recursion: countdown"]
    assert seen_by(ping, 4, recursion=True) == ["recursion: ping", "recursion: pong"]
    assert seen_by(countdown, 0, recursion=True) == []
    assert seen_by(loop, 10_000, recursion=True) == []
    nested = [[1, [2, [3, [4]]]], {"a": (5, [6])}]
    assert (
        seen_by(torch.utils._pytree.tree_map, lambda v: v + 1, nested, recursion=True) == []
    )  # library recursion


def test_counted_calls_are_not_violations() -> None:
    engine = {"engine runs": torch.autograd.graph._engine_run_backward}
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    with forbidden(count=engine) as seen:
        (g,) = torch.autograd.grad((x.sin() * x).sum(), x, create_graph=True)
        torch.autograd.grad((g * x).sum(), x)
    assert seen.violations == [] and seen.ops == {"engine runs": 2}
    with forbidden(calls={"backward": torch.autograd.backward}) as seen:
        x.sin().sum().backward()
    assert seen.violations == ["backward"]


def test_autograd_nodes_see_a_transpose_that_no_mode_saw() -> None:
    base = torch.randn(4, 5, 6, requires_grad=True)
    t = base.permute(2, 0, 1)[1:]  # the input's own history is not the submission's
    names = ["TransposeBackward0", "PermuteBackward0"]
    with torch._C._DisableTorchDispatch():
        hidden = t.mT
    assert autograd_nodes(hidden, [t], names) == ["autograd: TransposeBackward0"]
    assert autograd_nodes(as_strided_transpose(t, 0, 1), [t], names) == []
    assert autograd_nodes(torch.as_strided(t.transpose(0, 1), (2, 2), (1, 1)), [t], names) == [
        "autograd: TransposeBackward0"
    ]
    assert autograd_nodes(t.detach().mT, [t], names) == [] and autograd_nodes(3, [t], names) == []


# Run on two gloo ranks by labutils.launch (shipped by import path: module-level functions).


def ring_by_send_recv(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    incoming = torch.empty_like(x)
    work = dist.isend(x.clone(), (rank + 1) % world)
    dist.recv(incoming, (rank - 1) % world)
    work.wait()
    return x + incoming


def backend_allreduce(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    group = dist.distributed_c10d._get_default_group()
    group._get_backend(torch.device("cpu")).allreduce([out]).wait()
    return out


def distributed_spellings() -> dict[str, list[str]]:
    """Each way to all-reduce (or to send and receive), with what a window on the ring rule saw."""
    from torch.distributed import _functional_collectives as funcol
    from torch.distributed import distributed_c10d

    x = torch.ones(3) * (dist.get_rank() + 1)
    group = distributed_c10d._get_default_group()
    spellings = {
        "isend/recv": lambda: ring_by_send_recv(x),
        "batch_isend_irecv": lambda: [
            w.wait()
            for w in dist.batch_isend_irecv(
                [
                    dist.P2POp(dist.isend, x.clone(), (dist.get_rank() + 1) % 2),
                    dist.P2POp(dist.irecv, torch.empty(3), (dist.get_rank() + 1) % 2),
                ]
            )
        ],
        "dist.all_reduce": lambda: dist.all_reduce(x.clone()),
        "distributed_c10d.all_reduce": lambda: distributed_c10d.all_reduce(x.clone()),
        "ProcessGroup.allreduce": lambda: group.allreduce([x.clone()]).wait(),
        "Backend.allreduce": lambda: backend_allreduce(x),
        "functional all_reduce": lambda: funcol.all_reduce(x.clone(), "sum", group).wait(),
        "all_gather_object": lambda: dist.all_gather_object([None, None], 1),
        "barrier": dist.barrier,
    }
    out = {}
    for name, spelling in spellings.items():
        with forbidden(aten=COLLECTIVES, allow=POINT_TO_POINT, calls=collective_methods()) as seen:
            spelling()
        out[name] = seen.violations
    return out


@pytest.mark.slow
def test_collectives_are_caught_on_real_ranks_and_point_to_point_is_not() -> None:
    for rank, seen in enumerate(launch(distributed_spellings, 2, timeout=120, backend="gloo")):
        assert seen["isend/recv"] == [] and seen["batch_isend_irecv"] == [], rank
        for name in ("dist.all_reduce", "distributed_c10d.all_reduce", "ProcessGroup.allreduce"):
            assert "c10d.allreduce_.default" in seen[name], (rank, name)
        assert seen["Backend.allreduce"] == ["torch._C._distributed_c10d.Backend.allreduce"], rank
        assert "_c10d_functional.all_reduce.default" in seen["functional all_reduce"], rank
        assert "c10d.allgather_.default" in seen["all_gather_object"], rank
        assert "c10d.barrier.default" in seen["barrier"], rank


def test_first_use_imports_no_compiler_stack() -> None:
    """A window's dispatch mode skips torch's dynamo-disable wrapper: no torch._dynamo/sympy import (2 s, 70 MiB)
    in every rank or job that opens its first window."""
    code = (
        "import sys, torch\nfrom graders.inside.rules import forbidden\n"
        "with forbidden(aten=['aten.t']) as seen:\n    torch.ones(2, 2).t()\n"
        "assert seen.violations == ['aten.t.default'], seen.violations\n"
        "print(sorted(m for m in ('torch._dynamo', 'sympy') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parent.parent,
        check=True,
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def _plain_broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """A graded function that keeps a "plain Python" rule."""
    rank = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    return tuple(max(column) for column in zip(*padded, strict=True)) if padded else ()


def _dispatching() -> object:
    bound = functools.singledispatch(lambda *shapes: ())
    bound.register(tuple, np.broadcast_shapes)
    return bound


@pytest.mark.parametrize(
    ("graded", "modules"),
    [
        (np.broadcast_shapes, ["numpy"]),  # broadcast_shape = numpy.broadcast_shapes
        (np.linalg.norm, ["numpy"]),  # norm = numpy.linalg.norm
        (functools.partial(np.broadcast_shapes), ["numpy"]),  # through a C wrapper
        (_dispatching(), ["numpy"]),  # through functools.singledispatch's wrapper
        (torch.broadcast_shapes, ["torch"]),
    ],
    ids=["numpy-function", "numpy-norm", "partial", "singledispatch", "torch-function"],
)
def test_a_graded_name_bound_to_a_library_function_escapes_no_modules_rule(
    graded: object, modules: list[str]
) -> None:
    """The probe runner calls what a graded name holds (graders.inside.probing.outcome, through the contracts'
    namespace): a library function bound straight to the name is the submission's call, though the grader's
    package counts as library code. No vetting here: the hook alone."""
    from graders.inside.contracts import Record, Watched
    from graders.inside.probing import outcome

    ns = Watched({"graded": graded, "honest": _plain_broadcast}, Record())
    with forbidden(modules=modules) as seen:
        outcome(ns["graded"], (2, 1), (1, 3))
    assert any(v.startswith(tuple(modules)) for v in seen.violations), seen.violations
    with forbidden(modules=modules) as seen:
        assert outcome(ns["honest"], (2, 1), (1, 3)) == (2, 3)
    assert seen.violations == []
