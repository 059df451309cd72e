"""Probes of lab_tensors: each drives one exercise on inputs drawn for this grading run.

Inputs (shapes, strides, views of drawn tensors) are built here; the student's function is called
on them and what it returned is observed: values, shapes, strides, storage offsets, and whether a
later write into the input shows through the result (a view) or not (a copy).
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from graders.inside.draws import examples
from graders.inside.probing import Draw, Namespace, outcome, probe
from graders.inside.rules import autograd_nodes, forbidden

# The rules of exercises 3 to 5, checked on the operations the student's function runs (graders.inside.rules):
# however a transpose is spelled (t.mT, t.T, torch.ops.aten.transpose.int, T.swapaxes ...), it
# executes one of these ATen ops, which the reference never does.
TRANSPOSE_OPS = ["aten.transpose", "aten.transpose_", "aten.t", "aten.t_", "aten.permute", "aten.movedim",
                 "aten.moveaxis", "aten.swapaxes", "aten.swapaxes_", "aten.swapdims", "aten.swapdims_",
                 "aten.numpy_T", "aten.mT", "aten.mH", "aten.adjoint", "aten.matrix_H", "aten._mkldnn_transpose",
                 "aten._mkldnn_transpose_", "aten.transpose_copy", "aten.permute_copy", "aten.t_copy"]
WINDOW_OPS = ["aten.unfold", "aten.unfold_copy"]
# Other ways to lay a tensor over t's memory without as_strided: a storage-level set_, an alias op
# that takes strides, and a round trip through NumPy's or DLPack's view of the memory (its way back
# into torch; t.numpy() alone, say for a debugging print, is no violation). A result made that way
# is not a view of t either, which _view_result observes.
MEMORY_OPS = ["aten.set_", "aten._reshape_alias", "aten._reshape_alias_copy"]
MEMORY_CALLS = {
    "torch.from_numpy": torch.from_numpy, "torch.as_tensor": torch.as_tensor, "torch.asarray": torch.asarray,
    "torch.frombuffer": torch.frombuffer, "torch.from_dlpack": torch.from_dlpack,
    "numpy.lib.stride_tricks.as_strided": np.lib.stride_tricks.as_strided,
    "numpy.lib.stride_tricks.sliding_window_view": np.lib.stride_tricks.sliding_window_view,
}
# The same rules, read from the solution's source before it runs (graders.grader.vetting): any spelling the
# recorders above see as an op is also refused by name where it is written.
MEMORY_NAMES = ("set_", "stride_tricks", "sliding_window_view", "from_numpy", "as_tensor", "asarray", "frombuffer",
                "from_dlpack", "library")
TRANSPOSE_NAMES = (".t", ".T", ".mT", ".mH", ".H", "transpose", "transpose_", "permute", "movedim", "moveaxis",
                   "swapaxes", "swapdims", "adjoint", *MEMORY_NAMES)
WINDOW_NAMES = ("unfold", "unfold_copy", "im2col", "col2im", *MEMORY_NAMES)
PLAIN_PYTHON = ("torch", "numpy", "np", "library")
# Autograd nodes a forbidden view leaves behind (a second opinion that no mode switch hides).
TRANSPOSE_NODES = ["TransposeBackward0", "TransposeBackward1", "PermuteBackward0", "TBackward0"]
WINDOW_NODES = ["UnfoldBackward0"]


def _call_under_rules(fn: Callable, args: tuple, aten: list[str], nodes: list[str]) -> tuple[Any, list[str]]:
    """``outcome(fn, *args)`` and the rule violations seen while it ran (ops, calls, autograd nodes)."""
    with forbidden(aten=aten + MEMORY_OPS, calls=MEMORY_CALLS) as seen:
        got = outcome(fn, *args)
    inputs = [a for a in args if isinstance(a, torch.Tensor)]
    return got, sorted(set(seen.violations) | set(autograd_nodes(got, inputs, nodes)))


def _row_major(shape: tuple[int, ...]) -> list[int]:
    """Strides of a contiguous tensor of ``shape`` (input construction, pure Python)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]


def _grad_through(got: torch.Tensor, t: torch.Tensor) -> Any:
    """The gradient that reaches ``t`` from ``got`` weighted by 0, 1, 2 ... (each element's weight summed
    where windows overlap), or what stopped it: no gradient at all (a detached result)."""
    if not got.requires_grad:
        return {"gradient": "none (result does not require grad)"}
    weights = torch.arange(got.numel(), dtype=got.dtype).reshape(got.shape)
    (grad,) = torch.autograd.grad(got, t, weights, allow_unused=True)
    return {"gradient": "none (t not reached)"} if grad is None else grad


def _strided_layout(got: torch.Tensor, t: torch.Tensor) -> dict:
    """``got``'s strides and offset relative to ``t``'s, with the strides that address nothing left out: a
    dimension of size 1 (or a tensor with no element) reads the same memory whatever its stride."""
    empty = got.numel() == 0
    stride = tuple(None if empty or size == 1 else step for size, step in zip(got.shape, got.stride(), strict=True))
    return {"stride": stride, "offset": got.storage_offset() - t.storage_offset()}


def _view_result(got: Any, t: torch.Tensor, refill: torch.Tensor) -> Any:
    """What a returned view shows: values, layout relative to ``t``, the gradient it sends back to ``t``
    (when ``t`` requires grad), and values after ``t`` is rewritten."""
    if not isinstance(got, torch.Tensor):
        return {"returned": type(got).__name__}
    obs = {
        "values": got.detach().clone(),
        "shape": tuple(got.shape),
        "start": (got.data_ptr() - t.data_ptr()) // t.element_size(),
        "storage": (got.untyped_storage().data_ptr() - t.untyped_storage().data_ptr()) // t.element_size(),
        "is_view": got._is_view(),
        "requires_grad": got.requires_grad,
    }
    if t.requires_grad:
        obs["grad"] = outcome(_grad_through, got, t)
    with torch.no_grad():
        t.copy_(refill)
    obs["after_write"] = got.detach().clone()
    return obs


@probe("test_storage_index",
       clauses={"element [i, j, ...] = offset + i*stride[0] + j*stride[1] + ...": "cases.append((shape, stride",
                "an int64 tensor of shape `shape`, any number of dims (1-d to 4-d)": "draw.randint(0, 4)",
                "strides may be 0": "(0, 0)",
                "shape may be () (a 0-d tensor)": "((), (), offset)",
                "shape may hold a 0 (an empty tensor)": "((0, size)",
                "a size-1 dim with any stride": "((1, size), (draw.randint(0, 99), 1)",
                "any offset, one past 2**24 included (int64, never float32)": "2**24 + 2 * draw.randint(0, 99) + 1",
                "offset defaults to 0": "(size + 1, 1))]",
                "no side effect": "contracts"})
def storage_index(ns: Namespace, draw: Draw) -> list:
    """storage_index on random shapes, strides and offsets"""
    cases = []
    for _ in range(60):
        shape = tuple(draw.randint(1, 4) for _ in range(draw.randint(0, 4)))
        stride = tuple(draw.choice([0, 1, 2, 3, 5, 7]) for _ in shape)
        cases.append((shape, stride, draw.randint(0, 6)))
    offset, size = draw.randint(1, 6), draw.randint(2, 4)
    cases += [((), (), offset), ((0, size), (size, 1), offset), ((size, 0), (1, size), offset),  # 0-d and empty
              # empty, at offset 0, with the empty dim's stride larger than the rest of the span (no
              # storage of "offset + sum((n - 1) * s) + 1" elements exists for it)
              ((0,), (draw.randint(2, 7),), 0), ((size, 0), (1, size + draw.randint(1, 5)), 0),
              ((size, size), (0, 0), offset), ((1, size), (draw.randint(0, 99), 1), offset),  # all stride 0; size 1
              # an offset past 2**24, odd: float32 cannot hold it (an index computed in float rounds)
              ((size, 2), (2, 1), 2**24 + 2 * draw.randint(0, 99) + 1)]
    # and once with the default offset (0)
    return [outcome(ns["storage_index"], *case) for case in cases] + \
        [outcome(ns["storage_index"], (size, size + 1), (size + 1, 1))]


# Any layout a chain of views makes: a contiguous tensor, then up to five views of it, each any of
# slice (start and step), permute, select, diagonal, expand a size-1 dim, or a new size-1 dim with any stride.
# Drawn this way layouts combine kinds (a permuted slice, an expanded dim beside a stepped one, a diagonal's
# gaps, size-1 dims whose strides fit nothing), not one kind each.
VIEWS = st.one_of(
    st.tuples(st.just("slice"), st.integers(0, 3), st.integers(0, 3), st.integers(1, 3)),  # dim, start, step
    st.tuples(st.just("permute"), st.permutations(range(4))),
    st.tuples(st.just("select"), st.integers(0, 3), st.integers(0, 3)),  # dim, index
    st.tuples(st.just("diagonal"), st.integers(0, 3), st.integers(0, 3)),  # two dims
    st.tuples(st.just("expand"), st.integers(0, 3), st.integers(2, 4)),  # a size-1 dim (made if none), new size
    st.tuples(st.just("size_one"), st.integers(0, 4), st.integers(0, 99)),  # where, its stride
)
LAYOUTS = st.tuples(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.lists(VIEWS, max_size=5))


def _viewed(t: torch.Tensor, view: tuple) -> torch.Tensor:
    """``t`` (a meta tensor) through one view of VIEWS; dims and indices taken modulo what ``t`` has."""
    kind, *args = view
    if t.dim() == 0:
        return t
    dim = args[0] % t.dim() if kind != "permute" else 0
    if kind == "slice":
        return t.narrow(dim, args[1] % t.shape[dim], t.shape[dim] - args[1] % t.shape[dim])[
            (slice(None),) * dim + (slice(None, None, args[2]),)]
    if kind == "permute":
        return t.permute([d for d in args[0] if d < t.dim()])
    if kind == "select":
        return t.select(dim, args[1] % t.shape[dim])
    if kind == "diagonal":
        other = args[1] % t.dim()
        return t.diagonal(0, dim, other) if other != dim else t
    if kind == "expand":
        ones = [d for d in range(t.dim()) if t.shape[d] == 1]
        t = t if ones else t.unsqueeze(dim) if t.dim() < 4 else t
        ones = [d for d in range(t.dim()) if t.shape[d] == 1]
        if not ones:
            return t
        shape = list(t.shape)
        shape[ones[args[0] % len(ones)]] = args[1]
        return t.expand(shape)
    if t.dim() == 4:  # size_one: a new dim of size 1 that may carry any stride
        return t
    where = args[0] % (t.dim() + 1)
    return t.as_strided((*t.shape[:where], 1, *t.shape[where:]),
                        (*t.stride()[:where], args[1], *t.stride()[where:]), t.storage_offset())


# Kinds of view that a layout must show together, whatever the draw (the strategy favours short chains).
PAIRED_VIEWS = (("slice", "permute"), ("expand", "permute"), ("diagonal", "permute"), ("select", "slice"),
                ("size_one", "slice"), ("expand", "slice"), ("diagonal", "expand"), ("permute", "size_one"))


def _paired(draw: Draw, kinds: tuple[str, ...]) -> tuple:
    """A LAYOUTS spec of a drawn 2-4 dim tensor through one view of each of ``kinds``, in a drawn order,
    none of them the identity (steps of 2 or 3, a reversing permutation, a bigger size)."""
    shape = [draw.randint(2, 5) for _ in range(draw.randint(2, 4))]
    made = {"slice": ("slice", draw.randint(0, 3), draw.randint(0, 1), draw.randint(2, 3)),
            "permute": ("permute", (3, 2, 1, 0)), "select": ("select", draw.randint(0, 3), draw.randint(0, 3)),
            "diagonal": ("diagonal", 0, draw.randint(1, 3)), "expand": ("expand", draw.randint(0, 3), draw.randint(2, 4)),
            "size_one": ("size_one", draw.randint(0, 4), draw.randint(2, 99))}
    views = [made[kind] for kind in kinds]
    draw.random.shuffle(views)
    return shape, views


def _layout(spec: tuple) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape and strides of the layout ``spec`` (see LAYOUTS) describes."""
    shape, views = spec
    t = torch.empty(shape, device="meta")
    for view in views:
        t = _viewed(t, view)
    return tuple(t.shape), tuple(t.stride())


def _factorization(draw: Draw, numel: int) -> tuple[int, ...]:
    """``numel`` split into 1 to 4 drawn factors (a new shape with the same number of elements)."""
    parts = [1] * draw.randint(1, 4)
    for prime in (2, 3, 5, 7):
        while numel % prime == 0:
            parts[draw.randint(0, len(parts) - 1)] *= prime
            numel //= prime
    return tuple(parts)


def _strides_seen(fn: Callable, shape: tuple, stride: tuple, new_shape: tuple) -> dict:
    """view_strides' answer (strides of size-1 dims left out: any value is right for them) and what it
    used that the rule forbids: any operator on tensors (``view`` on a meta tensor too), any function of
    torch or NumPy."""
    with forbidden(aten=["*"], modules=["torch", "numpy"]) as seen:
        got = outcome(fn, shape, stride, new_shape)
    if isinstance(got, (tuple, list)):
        got = {"length": len(got)} if len(got) != len(new_shape) else \
            tuple(None if n == 1 else int(g) for g, n in zip(got, new_shape, strict=True))
    return {"strides": got, "violations": seen.violations}


@probe("test_view_strides", forbid=PLAIN_PYTHON,
       clauses={"the strides view would give, a tuple": "examples(draw, LAYOUTS, 110)",
                "layouts that combine kinds of view (sliced, permuted, expanded, diagonal)": "PAIRED_VIEWS",
                "None exactly when view raises": "(0, 1), (rows * cols,)",
                "dimensions of size 1 can go anywhere, with any stride": "unused",
                "a 0-d tensor to size-1 dims": "((), (), (1,)",
                "plain Python only: no torch or NumPy function, no tensors": "_strides_seen"})
def view_strides(ns: Namespace, draw: Draw) -> list:
    """view_strides on layouts any chain of views makes (sliced, stepped, permuted, selected, diagonal, expanded, size-1 dims with any stride), in plain Python"""
    cases = []
    for spec in examples(draw, LAYOUTS, 110) + [_paired(draw, kinds) for kinds in PAIRED_VIEWS for _ in range(5)]:
        shape, stride = _layout(spec)
        numel = 1
        for n in shape:
            numel *= n
        cases.append((shape, stride, _factorization(draw, numel)))
    cases.append(((), (), (1,) * draw.randint(0, 3)))
    rows, cols = draw.randint(2, 5), draw.randint(2, 5)
    cases.append(((rows, cols), (0, 1), (rows * cols,)))  # expanded: view raises
    cases.append(((rows, cols), (0, 1), (rows, 1, cols)))  # expanded, the real dim kept
    unused = draw.choice([b for b in range(2, 100) if b != cols])  # a size-1 dim's stride that fits no chunk
    cases.append(((rows, 1, cols), (cols, unused, 1), (rows * cols,)))
    return [_strides_seen(ns["view_strides"], *case) for case in cases]


def _transpose_case(draw: Draw, grad: bool) -> tuple[torch.Tensor, int, int]:
    """A drawn view (sliced, stepped, maybe permuted) of a drawn tensor and two dims, maybe negative;
    ``grad``: the tensor requires grad."""
    shape = [draw.randint(2, 6) for _ in range(draw.randint(2, 4))]
    base = draw.randn(*shape).requires_grad_(grad)
    index = tuple(slice(draw.randint(0, 1), None, draw.choice([1, 1, 2])) for _ in shape)
    t = base[index]
    if draw.random.random() < 0.4:
        order = list(range(t.dim()))
        draw.random.shuffle(order)
        t = t.permute(order)
    if draw.random.random() < 0.3:
        t = t[draw.randint(0, t.shape[0] - 1)] if t.dim() > 2 else t
    dim0 = draw.randint(-t.dim(), t.dim() - 1)
    if draw.random.random() < 0.1:  # the same dim twice: the identity, still a view
        return t, dim0, dim0 - t.dim() if dim0 >= 0 else dim0
    dim1 = draw.choice([d for d in range(t.dim()) if d != dim0 % t.dim()])
    return t, dim0, dim1 - t.dim() if draw.random.random() < 0.3 else dim1


@probe("test_transpose_view", forbid=TRANSPOSE_NAMES,
       clauses={"the same values, shape and strides as t.transpose(dim0, dim1)": "_strided_layout(got, t)",
                "a view: same storage, same storage offset, writes visible": "_view_result(got, t, refill)",
                "gradients flow back to t (no detach)": "case < 3",
                "built with torch.as_strided only (no transpose, permute, set_ ...)": "_call_under_rules",
                "dims may be negative": "(four_d, -1, 0)",
                "the same dim twice (the identity)": "(one_d, 0, -1)",
                "t a non-contiguous view with an offset, 1-d to 4-d": "_transpose_case(draw",
                "t itself left unchanged": "contracts"})
def transpose_view(ns: Namespace, draw: Draw) -> list:
    """transpose_view is a view with the right values, strides, offset and gradient, made with torch.as_strided only"""
    observations = []
    one_d = draw.randn(draw.randint(8, 20)).requires_grad_()[draw.randint(1, 3)::2]
    four_d = draw.randn(2, 3, 4, 5)[:, 1:, ::2, 1:]
    fixed = [(one_d, 0, -1), (four_d, -1, 0), (four_d, 1, 1 - four_d.dim())]
    for case in range(25 + len(fixed)):
        t, dim0, dim1 = fixed[case - 25] if case >= 25 else _transpose_case(draw, case < 3 or draw.random.random() < 0.4)
        refill = draw.randn(*t.shape)
        got, violations = _call_under_rules(ns["transpose_view"], (t, dim0, dim1), TRANSPOSE_OPS, TRANSPOSE_NODES)
        if isinstance(got, torch.Tensor):
            layout = _strided_layout(got, t)
            observations.append({**_view_result(got, t, refill), **layout, "violations": violations})
        else:
            observations.append({"returned": got, "violations": violations})
    return observations


@probe("test_sliding_windows", forbid=WINDOW_NAMES,
       clauses={"row i is x[i*step : i*step + size], every window that fits": "_view_result(got, x, refill)",
                "a view made with torch.as_strided (not unfold, set_ ...)": "_call_under_rules",
                "gradients flow back to x (no detach)": "case in (0, 2, 3)",
                "size == len(x) (one window)": "size = n if case == 0",
                "size 1": "1 if case == 1",
                "windows that overlap (step < size)": "size - 1 if case == 4",
                "windows that touch (step == size)": "size if case == 5",
                "windows with gaps (step > size), a step past the end": "n + draw.randint(0, 3) if case == 6",
                "x a strided view with an offset (base[3::2])": "base[start::step_x]",
                "x itself left unchanged": "contracts"})
def sliding_windows(ns: Namespace, draw: Draw) -> list:
    """sliding_windows returns a view of x whose rows are the windows (values and gradient), made with torch.as_strided (no unfold)"""
    observations = []
    for case in range(25):
        base = draw.randn(draw.randint(20, 60)).requires_grad_(case in (0, 2, 3) or draw.random.random() < 0.4)
        start, step_x = draw.randint(0, 7), draw.choice([1, 1, 2, 3, 5])
        x = base[start::step_x]
        n = x.shape[0]
        size = n if case == 0 else 1 if case == 1 else draw.randint(2, n) if case in (4, 5) else draw.randint(1, n)
        step = 1 if case == 1 else size - 1 if case == 4 else size if case == 5 else \
            n + draw.randint(0, 3) if case == 6 else draw.randint(1, max(1, n - size) + 2)
        refill = draw.randn(n)
        got, violations = _call_under_rules(ns["sliding_windows"], (x, size, step), WINDOW_OPS, WINDOW_NODES)
        seen = _view_result(got, x, refill) if isinstance(got, torch.Tensor) else {"returned": got}
        observations.append({**seen, "violations": violations})
    return observations


def _compatible_shapes(draw: Draw) -> list[tuple[int, ...]]:
    """Shapes that broadcast: suffixes of one drawn shape with some sizes replaced by 1."""
    target = [draw.choice([0, 1, 2, 3, 4, 5]) for _ in range(draw.randint(0, 4))]
    shapes = []
    for _ in range(draw.randint(1, 4)):
        keep = draw.randint(0, len(target))
        shapes.append(tuple(1 if draw.random.random() < 0.4 else n for n in target[len(target) - keep:]))
    return shapes


@probe("test_broadcast_shape", forbid=(*PLAIN_PYTHON, "broadcast_shapes", "broadcast_to", "broadcast_tensors"),
       clauses={"the broadcast shape, a tuple: align from the right, equal, 1 or missing": "_compatible_shapes(draw)",
                "ValueError when the shapes do not broadcast": "for _ in range(150)",
                "size 0 broadcasts with 1 and with 0 only": "[(0,), (size,)]",
                "any number of shapes, none included": "[], [(0,), (1,)]",
                "shapes of different lengths": "[(size, 1), (draw.randint(2, 9),)]",
                "later shapes that clash with each other, not with the first": "[(1,), (size,), (size + 1,)]",
                "plain Python only: no torch or NumPy function, no tensors": "_plain_python"})
def broadcast_shape(ns: Namespace, draw: Draw) -> list:
    """broadcast_shape's result, or ValueError for shapes that do not broadcast, in plain Python (no torch, NumPy or tensors)"""
    cases = []
    for _ in range(150):
        cases.append([tuple(draw.choice([0, 1, 1, 2, 3]) for _ in range(draw.randint(0, 4)))
                      for _ in range(draw.randint(1, 4))])
    cases += [_compatible_shapes(draw) for _ in range(100)]
    size = draw.randint(2, 9)
    cases += [[], [(0,), (1,)], [(0,), (size,)], [(size,), (0,)], [(size, 1), (draw.randint(2, 9),)],
              [(1, size), (draw.randint(2, 5), 1), (draw.randint(2, 5), 1, 1)],
              [(1,), (size,), (size + 1,)]]  # the later shapes clash with each other, not with the first
    return [_plain_python(ns["broadcast_shape"], shapes) for shapes in cases]


def _plain_python(fn: Callable, shapes: list[tuple[int, ...]]) -> dict:
    """``fn(*shapes)`` (or the exception it raised) and what it used that the rule forbids: any
    operator on tensors, any function of torch or NumPy (``torch.broadcast_shapes`` however spelled)."""
    with forbidden(aten=["*"], modules=["torch", "numpy"]) as seen:
        got = outcome(fn, *shapes)
    return {"shape": got, "violations": seen.violations}


def _random_slice(draw: Draw, m: torch.Tensor) -> torch.Tensor:
    """A strided window of the matrix ``m``: drawn starts and steps in both dims."""
    r0, c0 = draw.randint(0, m.shape[0] - 1), draw.randint(0, m.shape[1] - 1)
    return m[r0::draw.randint(1, 3), c0::draw.randint(1, 3)]


def _overlap_pairs(draw: Draw) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Pairs of views into one drawn matrix: disjoint, interleaved, touching, expanded, byte-level."""
    rows, cols = draw.randint(4, 8), draw.randint(4, 8)
    m = draw.randn(rows, cols)
    r, c = draw.randint(1, rows - 1), draw.randint(1, cols - 1)
    flat = draw.randn(draw.randint(10, 30))
    k = draw.randint(1, flat.shape[0] - 2)
    arr = np.arange(draw.randint(10, 30), dtype=np.float32)
    j = draw.randint(1, arr.shape[0] - 2)
    byte = draw.randint(0, 3)
    inner = draw.randint(1, 3)  # a byte strictly inside a float32 element (not its first byte)
    m_bytes = m.view(torch.uint8).view(-1)
    pairs = [
        (m[:, :c], m[:, c:]), (m[:r], m[r:]), (m[:r + 1], m[r:, c:]),
        (m[::2], m[1::2]), (m[:, ::2], m[:, 1::2]), (m[::2, ::2], m[1::2, 1::2]),
        (flat[:k], flat[k:]), (flat[:k + 1], flat[k:]), (flat[::2], flat[1::2]), (flat, flat.clone()),
        (m[:, :1].expand(rows, cols - 1), m[:, 1:]), (m[0, :1].expand(3, 3), m[:, 0]),
        (m[0], m_bytes[4 * (c - 1) + byte:4 * (c - 1) + byte + 1]),
        (m[0], m_bytes[4 * (c - 1) + inner:4 * (c - 1) + inner + 1]), (m[1], m_bytes[4 * cols + inner:4 * cols + 4]),
        (m[1], m_bytes[4 * (cols - 1):4 * cols]), (m[1], m_bytes[4 * cols + byte:4 * cols + 4]),
        (m[1], m_bytes[4 * cols - 1 - byte:4 * cols - byte]),
        (m[0, :0], m[0]), (m[r, c], m[r - 1:, c]), (m[r, c], m[:r, c]),
        (m[0, :1], m_bytes[4:5]),  # the byte right after a float: disjoint (addresses off by one element say not)
        (m.t(), m[r]), (m.view(cols, rows).t(), flat),
        (torch.from_numpy(arr[:j + 1]), torch.from_numpy(arr[j:])),
        (torch.from_numpy(arr[:j]), torch.from_numpy(arr[j:])),
    ]
    pairs += [(_random_slice(draw, m), _random_slice(draw, m)) for _ in range(30)]
    return pairs


@probe("test_overlaps",
       clauses={"a Python bool: some byte of an element of a is a byte of an element of b": "_overlap_pairs(draw)",
                "sharing a storage is not enough (interleaved views)": "_overlap_pairs(draw)",
                "different dtypes (a uint8 view of a float tensor)": "view(torch.uint8)",
                "different storage objects over the same memory (torch.from_numpy)": "_overlap_pairs(draw)",
                "empty tensors (two of them; one beside a full one)": "m[0, :0], m[1, :0]",
                "0-d tensors": "m[r, c], m[r, c]",
                "the order of the arguments": "b, a",
                "a and b left unchanged": "contracts"})
def overlaps(ns: Namespace, draw: Draw) -> list:
    """overlaps on disjoint, interleaved, touching, expanded and byte-level views"""
    pairs = _overlap_pairs(draw)
    m = draw.randn(draw.randint(3, 6), draw.randint(3, 6))
    r, c = draw.randint(0, m.shape[0] - 1), draw.randint(0, m.shape[1] - 1)
    wide = m.view(torch.uint8)[:, 4 * c:4 * c + draw.randint(1, 4)]
    pairs += [(m[0, :0], m[1, :0]), (m[0, :0], m[0, :0]), (m[r, c], m[r, c]), (m[r, c], m[r - 1, c])]
    pairs += [(b, a) for a, b in [(m[:, c], wide), (m[r, :c], wide), (m[0, :0], m[0])]]
    return [outcome(ns["overlaps"], a, b) for a, b in pairs]


# Exercise 7: im2col of the digits images. However the patches are reached through unfold/im2col
# (Tensor.unfold, F.unfold, torch.ops.aten.im2col), they run one of these ops, which the reference never does.
PATCH_OPS = WINDOW_OPS + ["aten.im2col", "aten.col2im"]


def _digits_batches(draw: Draw) -> list[tuple[torch.Tensor, int]]:
    """Batches of real digits images: contiguous, every other image (an offset), a crop (offset and
    gaps), channels-last (non-contiguous), a drawn multi-channel batch (the first batch and the
    transposed one require grad); k at 1, 2, 3 and the full size."""
    from labutils import digits

    x = digits.load(seed=0).train.x
    n0 = draw.randint(0, 40)
    batch = x[n0:n0 + draw.randint(2, 6)].clone().requires_grad_(True)
    multi = draw.randn(draw.randint(1, 3), 3, draw.randint(4, 7), draw.randint(4, 7))
    views = [
        batch,
        x[n0 + 1:n0 + 12:2].clone(),
        x[n0:n0 + 3, :, draw.randint(1, 3):, draw.randint(1, 3):],
        x[n0:n0 + 3].permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
        multi,
        multi[:, 1:, ::2, 1:],
        multi.detach().clone().requires_grad_(True).transpose(2, 3),
    ]
    cases = []
    for t in views:
        side = min(t.shape[-2:])
        for k in sorted({1, draw.randint(2, side), min(3, side), side}):
            cases.append((t, k))
    return cases


def _conv_matches(got: Any, t: torch.Tensor, k: int, weight: torch.Tensor) -> Any:
    """Whether an einsum of the returned patches with ``weight`` equals F.conv2d (the point of im2col)."""
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != (t.shape[0], t.shape[1], t.shape[2] - k + 1,
                                                                 t.shape[3] - k + 1, k, k):
        return None
    with torch.no_grad():
        mine = torch.einsum("nchwab,ocab->nohw", got.detach(), weight)
        return bool(torch.allclose(mine, torch.nn.functional.conv2d(t.detach(), weight), atol=1e-5))


@probe("test_patches", forbid=WINDOW_NAMES,
       clauses={"[n, c, i, j, a, b] = images[n, c, i + a, j + b], shape (N, C, H-k+1, W-k+1, k, k)":
                    "_view_result(got, t, refill)",
                "the patches redo a Conv2d as one einsum": "_conv_matches",
                "made with torch.as_strided (no unfold, F.unfold, set_ ...)": "_call_under_rules",
                "a view of images that gradients flow back through": "requires_grad_()",
                "non-contiguous batches with an offset, crops, channels-last, several channels":
                    "_digits_batches(draw)",
                "1 <= k <= min(H, W), both ends": "draw.randn(1, 2, 4, 7), 4",
                "a batch of one, H != W": "draw.randn(1, 2, 4, 7)",
                "images left unchanged": "contracts"})
def patches(ns: Namespace, draw: Draw) -> list:
    """patches is the im2col view of digits batches (offsets, crops, channels-last; values and gradient), made with torch.as_strided"""
    observations = []
    extra = [(draw.randn(1, 2, 4, 7), 4), (draw.randn(2, 1, 6, 3).requires_grad_(), 1),
             (draw.randn(3, 2, 7, 5).requires_grad_()[:, :, 1:, ::2], 3)]
    for t, k in _digits_batches(draw) + extra:
        weight = draw.randn(2, t.shape[1], k, k)
        refill = draw.randn(*t.shape)
        got, violations = _call_under_rules(ns["patches"], (t, k), PATCH_OPS, WINDOW_NODES + ["Im2ColBackward0"])
        conv = _conv_matches(got, t, k, weight)
        if isinstance(got, torch.Tensor):
            layout = _strided_layout(got, t)
            observations.append({**_view_result(got, t, refill), **layout, "conv": conv, "violations": violations})
        else:
            observations.append({"returned": got, "violations": violations})
    return observations


def _diagnose_layouts(draw: Draw) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Drawn layouts of every kind, plus the boundaries: 0-d, one element, size-1 dims with any stride,
    stride 0 on a size-1 dim (no overlap) and on a bigger one, gaps, overlapping windows torch cannot see."""
    specs = examples(draw, LAYOUTS, 80) + [_paired(draw, kinds) for kinds in PAIRED_VIEWS for _ in range(5)]
    layouts = [_layout(spec) for spec in specs]
    rows, cols, big = draw.randint(2, 5), draw.randint(2, 5), draw.randint(2, 99)
    layouts += [
        ((), ()), ((1,), (big,)), ((1, 1), (big, 0)), ((cols,), (draw.randint(2, 4),)),
        ((rows, cols), (cols * 2, 2)), ((rows, cols), (cols + 1, 1)), ((rows, cols), (1, rows)),
        ((rows, cols), (0, 1)), ((rows, cols), (1, 0)), ((1, cols), (0, 1)), ((rows, 1), (1, 0)),
        ((rows, cols), (1, 1)), ((rows, 1, cols), (cols, big, 1)), ((rows, 1, 1), (1, big, big)),
        ((2, rows, cols), (rows * cols, 1, rows)), ((rows, cols, 2), (cols * 2, 2, 1)),
    ]
    return layouts


@probe("test_diagnose", forbid=PLAIN_PYTHON,
       clauses={"view(-1): alias or raise; reshape(-1): alias or copy; contiguous(): alias or copy":
                    "_diagnose_layouts(draw)",
                "add_(1) raises on a dim of size > 1 with stride 0, only then": "_diagnose_layouts(draw)",
                "0-d, one element, size-1 dims with any stride": "_diagnose_layouts(draw)",
                "plain Python only: no torch or NumPy function, no tensors": "forbidden(aten=[\"*\"]"})
def diagnose(ns: Namespace, draw: Draw) -> list:
    """diagnose on contiguous, permuted, sliced, stepped, expanded, size-1 and 0-d layouts, in plain Python"""
    out = []
    for shape, stride in _diagnose_layouts(draw):
        with forbidden(aten=["*"], modules=["torch", "numpy"]) as seen:
            got = outcome(ns["diagnose"], shape, stride)
        out.append({"diagnosis": got, "violations": seen.violations})
    return out
