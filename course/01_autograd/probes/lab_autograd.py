"""Probes of lab_autograd: each drives one exercise on inputs and graphs drawn for this grading run.

The probes build tensors, functions and graphs from the draw, call the student's code on them and
return what it produced: gradients, forward values, the gradient that reached x after a backward
with a drawn upstream gradient, the order of graph nodes (as indices of the probe's own walk), a
gradient penalty and the gradients it sends to a critic, bytes saved per module of the digits CNN
and the name of the backward node where a NaN is born. The reference values come from running the same probe after the source notebook.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from graders.inside.draws import examples
from graders.inside.probing import Draw, Namespace, outcome, probe
from graders.inside.rules import forbidden

# "Use only calls to f": every reverse-mode path (backward, autograd.grad, torch.func.grad, the
# engine itself) runs the engine; forward mode makes dual tensors; gradcheck has a numerical Jacobian.
ENGINE = {"torch.autograd.graph._engine_run_backward": torch.autograd.graph._engine_run_backward,
          "torch._C._EngineBase.run_backward": type(torch.autograd.Variable._execution_engine).run_backward}
NO_AUTOGRAD = {**ENGINE, "torch.autograd.forward_ad.make_dual": torch.autograd.forward_ad.make_dual,
               "torch._make_dual": torch._make_dual}
DIFFERENTIATING_MODULES = ["torch.func", "torch._functorch", "torch.autograd.functional"]


def _gradient_seen(numerical_gradient: Callable, f: Callable, x: torch.Tensor, **kwargs: Any) -> dict:
    """numerical_gradient's answer for ``f`` at ``x``, ``x`` as it is after the call, and any autograd used."""
    with forbidden(calls=NO_AUTOGRAD, modules=[*DIFFERENTIATING_MODULES, "torch.autograd.gradcheck"]) as seen:
        grad = outcome(numerical_gradient, f, x, **kwargs)
    return {"grad": grad, "x_after": x.clone(), "violations": seen.violations}


# Tolerance: two correct central differences differ by f's rounding (2.2e-16 |f|) over 2 eps, ~1e-9 for
# |f| ~ 10 at eps = 1e-6 (a non-contiguous x sums in another order); f evaluated in float32 differs by
# ~1e-7 |f| / 2 eps, 0.5 and more: 1e-7 tells them apart with room on both sides.
@probe("test_numerical_gradient", rtol=1e-7, atol=1e-7,
       forbid=(".backward", "autograd", ".func", "forward_ad", "make_dual", "gradcheck", "jacobian"),
       clauses={"central differences (f(x + h e_i) - f(x - h e_i)) / 2h": "lambda t: torch.exp(k * t)",
                "h is eps itself, not scaled by |x_i|": "far_from_zero",
                "each difference starts from x itself": "t.prod()",
                "eps defaults to 1e-6": "_gradient_seen(fn, smooth, draw.randn(draw.randint(1, 4)",
                "returns a tensor shaped like x, any shape (0-d, 1-d, 2-d, 3-d, empty)": "zero_d",
                "the same dtype as x (float32 too)": "quarters",
                "x is not modified (values, requires_grad, .grad)": "contracts",
                "a non-contiguous x": ".t())",
                "only calls to f: no autograd, no library differences": "_gradient_seen(fn",
                "f may go through NumPy": "through_numpy",
                "f may return a 0-d tensor or a float": "float(np.sum",
                "an x that requires grad": ".requires_grad_())"})
def numerical_gradient(ns: Namespace, draw: Draw) -> list:
    """numerical_gradient: central differences with step eps, f only called (no autograd), x unchanged"""
    fn = ns["numerical_gradient"]
    a, b = 0.5 + draw.random.random(), draw.randint(1, 3)

    def smooth(t: torch.Tensor) -> torch.Tensor:
        return (t.sin() * t).sum() * a + t.pow(2).mean() * b

    def through_numpy(t: torch.Tensor) -> float:  # autograd cannot differentiate this
        values = t.numpy()
        return float(np.sum(np.cos(values) * values ** 2) * a)

    k = draw.randint(4, 6)
    c = torch.randint(-8, 9, (draw.randint(2, 6),), generator=draw.gen).float()
    quarters = torch.randint(-20, 21, c.shape, generator=draw.gen).float() / 4
    signs = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    far_from_zero = (1.5 + 1.5 * torch.rand(4, dtype=torch.float64, generator=draw.gen)) * signs
    cases = [
        _gradient_seen(fn, smooth, draw.randn(draw.randint(1, 4), draw.randint(1, 4), dtype=torch.float64)),
        _gradient_seen(fn, through_numpy, torch.rand(draw.randint(3, 6), dtype=torch.float64, generator=draw.gen)),
        _gradient_seen(fn, lambda t: torch.exp(k * t).sum(), torch.rand(4, dtype=torch.float64, generator=draw.gen)),
        _gradient_seen(fn, lambda t: (t ** 3).sum(), torch.rand(5, dtype=torch.float64, generator=draw.gen),
                       eps=draw.choice([5e-3, 1e-2, 2e-2, 3e-2])),
        _gradient_seen(fn, smooth, draw.randn(draw.randint(2, 4), 3, dtype=torch.float64).t()),
        _gradient_seen(fn, lambda t: (c * t).sum(), quarters, eps=0.5),  # float32, exact arithmetic
        # h is eps itself, not eps scaled by |x_i|: a cubic at |x| in [1.5, 3] with a large eps has the
        # error h^2 (exactly), so a relative step answers 3x^2 + eps^2 x^2 instead of 3x^2 + eps^2.
        _gradient_seen(fn, lambda t: (t ** 3).sum(), far_from_zero, eps=draw.choice([0.1, 0.2, 0.25])),
        # not separable: each difference must start from x itself, not from the previous one's point
        _gradient_seen(fn, lambda t: t.prod(), 1 + torch.rand(4, dtype=torch.float64, generator=draw.gen), eps=0.1),
        # an x that requires grad, an f through NumPy: the differences are taken on detached data
        _gradient_seen(fn, through_numpy, torch.rand(3, dtype=torch.float64, generator=draw.gen).requires_grad_()),
    ]
    # any shape x may have: 0-d, 3-d, and empty (a gradient with no element)
    zero_d = torch.randn((), dtype=torch.float64, generator=draw.gen)
    cases += [_gradient_seen(fn, smooth, zero_d),
              _gradient_seen(fn, smooth, draw.randn(2, draw.randint(1, 3), 2, dtype=torch.float64)),
              _gradient_seen(fn, lambda t: (t.sin() * t).sum() * a, torch.zeros(0, dtype=torch.float64))]
    return cases


def _softplus_seen(apply: Callable, x: torch.Tensor, upstream: torch.Tensor) -> dict:
    """Forward value, x.grad after backward(upstream), and the grad_fn's type name."""
    x = x.clone().requires_grad_()
    y = apply(x)
    node = type(y.grad_fn).__name__
    y.backward(upstream)
    return {"forward": y.detach(), "grad": x.grad, "node": node}


def _both_signs(draw: Draw, low: float, high: float, count: int, dtype: torch.dtype) -> torch.Tensor:
    """``count`` magnitudes uniform in [low, high], each once positive and once negative."""
    magnitude = low + (high - low) * torch.rand(count, generator=draw.gen, dtype=torch.float64)
    return torch.cat([magnitude, -magnitude]).to(dtype)


@probe("test_stable_softplus", atol=0.0,  # tails compared relatively: log1p is the point
       clauses={"forward: log(1 + exp(x)), stable (log1p in the tails)": "_both_signs(draw, 30, 60, 2, f64)",
                "forward and backward finite for any input (float32 past 89, float64 past 710)":
                    "_both_signs(draw, 89, 120, 2, f32)",
                "backward: grad_output * sigmoid(x), a non-trivial upstream gradient": "upstream(x)",
                "a torch.autograd.Function (its own backward node)": "_softplus_seen",
                "float32 and float64": "f32",
                "tensors of any shape: 0-d, empty, 2-d": "torch.zeros(0, dtype=f64)"})
def stable_softplus(ns: Namespace, draw: Draw) -> list:
    """StableSoftplus: forward and gradient with drawn upstream gradients, finite for large |x|"""
    apply = ns["StableSoftplus"].apply
    f64, f32 = torch.float64, torch.float32
    inputs = [
        draw.randn(20, dtype=f64) * draw.randint(1, 8),
        torch.cat([_both_signs(draw, 710, 1000, 2, f64), _both_signs(draw, 300, 700, 2, f64),
                   _both_signs(draw, 30, 60, 2, f64), draw.randn(4, dtype=f64)]),
        torch.cat([_both_signs(draw, 89, 120, 2, f32), 88 + torch.rand(2, generator=draw.gen),
                   _both_signs(draw, 15, 25, 2, f32), torch.zeros(1)]),
        (torch.linspace(-40, 40, 24, dtype=f64) + draw.randn(24, dtype=f64)).reshape(4, 6),
        draw.randn(3, 5) * 30,
        torch.randn((), generator=draw.gen) * 50,  # 0-d
        torch.zeros(0, dtype=f64),  # empty
    ]

    def upstream(x: torch.Tensor) -> torch.Tensor:
        return torch.randn(x.shape, generator=draw.gen, dtype=x.dtype) * 2

    return [outcome(_softplus_seen, apply, x, upstream(x)) for x in inputs]


def _reversal_seen(grad_reverse: Callable, x: torch.Tensor, lambdas: list, upstream: torch.Tensor) -> dict:
    """Sum of grad_reverse(x, lambd) over ``lambdas`` (None: the default), then backward(upstream)."""
    x = x.clone().requires_grad_()
    before = x.detach().clone()
    outputs = [grad_reverse(x) if lambd is None else grad_reverse(x, lambd) for lambd in lambdas]
    total = outputs[0]
    for out in outputs[1:]:
        total = total + out
    total.backward(upstream)
    return {"forward": [out.detach() for out in outputs], "grad": x.grad, "x_after": x.detach() - before}


def _network_seen(grad_reverse: Callable, draw: Draw, lambd: float) -> dict:
    """Gradients of a drawn two-layer network with grad_reverse between the layers."""
    n_in, n_mid = draw.randint(2, 6), draw.randint(2, 5)
    feat, head = torch.nn.Linear(n_in, n_mid), torch.nn.Linear(n_mid, 1)
    with torch.no_grad():
        for p in [*feat.parameters(), *head.parameters()]:
            p.copy_(draw.randn(*p.shape))
    head(grad_reverse(feat(draw.randn(draw.randint(3, 9), n_in)), lambd)).pow(2).sum().backward()
    return {"feat": feat.weight.grad, "feat_bias": feat.bias.grad, "head": head.weight.grad}


@probe("test_grad_reverse",
       clauses={"identity in the forward pass, -lambd times the upstream gradient in backward": "_reversal_seen",
                "the default lambd = 1.0": "[None]",
                "lambd = 0 is a float like any other (no gradient reaches x)": "[0.0]",
                "each call uses its own lambd (two layers in one graph)": "[lambd(), lambd()]",
                "parameters before and after the layer get their gradients": "_network_seen",
                "x left unmodified": "contracts",
                "x of any shape (0-d included)": "torch.randn((), generator=draw.gen)",
                "the Function GradReverse applied (its node in the graph)": "grad_fn).__name__"})
def grad_reverse(ns: Namespace, draw: Draw) -> list:
    """grad_reverse: identity forward, -lambd x the upstream gradient, lambd kept per call"""
    fn = ns["grad_reverse"]

    def lambd() -> float:
        return round(0.05 + 3 * draw.random.random(), 3)

    observations = []
    for lambdas in [[lambd()], [lambd()], [None], [lambd(), lambd()], [lambd(), None, lambd()]]:
        x = draw.randn(draw.randint(1, 5), draw.randint(1, 5))
        observations.append(outcome(_reversal_seen, fn, x, lambdas, draw.randn(*x.shape)))
    observations.append(outcome(_network_seen, fn, draw, lambd()))
    x = draw.randn(draw.randint(1, 4))
    observations.append(outcome(_reversal_seen, fn, x, [0.0], draw.randn(*x.shape)))
    zero_d = torch.randn((), generator=draw.gen)
    observations.append(outcome(_reversal_seen, fn, zero_d, [lambd()], torch.randn((), generator=draw.gen)))
    x = draw.randn(draw.randint(1, 4)).requires_grad_()
    observations.append(outcome(lambda: type(fn(x, lambd()).grad_fn).__name__))
    return observations


def _node_index(output: torch.Tensor) -> dict:
    """Every node reachable from output.grad_fn, numbered in the order this walk discovers them."""
    index, todo = {output.grad_fn: 0}, [output.grad_fn]
    while todo:
        node = todo.pop()
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in index:
                index[nxt] = len(index)
                todo.append(nxt)
    return index


def _order_seen(backward_order: Callable, output: torch.Tensor) -> dict:
    """backward_order's list, each node written as its number in :func:`_node_index` (-1: unknown),
    and whether the submission recursed (the exercise asks for an iterative walk)."""
    index = _node_index(output)
    with forbidden(recursion=True) as seen:
        order = outcome(backward_order, output)
    if isinstance(order, dict):
        return {"raised": order, "violations": seen.violations}
    return {"type": type(order).__name__, "order": [index.get(node, -1) for node in order],
            "violations": seen.violations}


OPS = ("add", "mul", "sub", "sin", "exp", "const", "square")


def _op(draw: Draw, op: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """One node of a drawn graph: ``op`` of ``a`` (and ``b``); "const" multiplies by a tensor without grad."""
    if op == "add":
        return a + b
    if op == "mul":
        return a * b
    if op == "sub":
        return b - a
    if op == "sin":
        return a.sin()
    if op == "exp":
        return (a * 0.1).exp()
    if op == "const":
        return a * draw.randn(2)
    return a * a


def _chained_graph(draw: Draw, ops: int) -> torch.Tensor:
    """A graph whose only valid backward order is unique: every op consumes the previous result.

    One leaf, each op takes the previous tensor and possibly an earlier one (shared nodes, skips)
    or a constant without grad (a None edge); so the nodes form one chain plus extra edges that
    all point down it.
    """
    pool = [draw.randn(2).requires_grad_()]
    for _ in range(ops):
        prev, other = pool[-1], draw.choice(pool)
        pool.append(_op(draw, draw.choice(OPS), prev, other))
    return pool[-1].sum()


def _fixed_graphs(draw: Draw) -> list[torch.Tensor]:
    """The shapes the hidden tests use: h + h.exp(), x * x, a deep chain, a deep graph with branches."""
    x = draw.randn(3).requires_grad_()
    h = x.sin()
    skewed = (h + h.exp()).sum()
    square = (x * x).sum()
    chain = x
    for _ in range(draw.randint(10_000, 10_500)):
        chain = chain * 1.0001
    branchy = draw.randn(2).requires_grad_()
    for i in range(draw.randint(3000, 3100)):
        branchy = branchy + branchy.sin() if i % 2 else branchy * 1.001
    return [skewed, square, chain.sum(), branchy.sum()]


# Any graph: 1-3 leaves, then ops each reading one or two earlier tensors (any, not only the newest), the
# output summing 1-4 of them. Drawn this way, graphs have diamonds, fan-in and fan-out, leaves reached by
# several paths, constants (a None edge) and ops the output never reaches, so most have many valid orders.
GRAPHS = st.tuples(st.integers(1, 3),
                   st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 40), st.integers(0, 40)), max_size=30),
                   st.lists(st.integers(0, 40), min_size=1, max_size=4))


def _dag(draw: Draw, spec: tuple) -> torch.Tensor:
    """The graph ``spec`` (see GRAPHS) describes, on values from the draw."""
    leaves, ops, heads = spec
    pool = [draw.randn(2).requires_grad_() for _ in range(leaves)]
    for op, i, j in ops:
        pool.append(_op(draw, op, pool[i % len(pool)], pool[j % len(pool)]))
    return sum(pool[k % len(pool)].sum() for k in heads)


def _valid_order_seen(backward_order: Callable, output: torch.Tensor) -> dict:
    """Whether backward_order's list is a valid order (each reachable node once, after every node that
    consumes it), without asking for one order among the many a drawn graph allows."""
    index = _node_index(output)
    with forbidden(recursion=True) as seen:
        order = outcome(backward_order, output)
    if not isinstance(order, list | tuple):
        return {"type": type(order).__name__, "violations": seen.violations}
    position = {node: at for at, node in enumerate(order) if node in index}
    consumed_before = all(position[node] < position.get(nxt, len(order)) for node in position
                          for nxt, _ in node.next_functions if nxt is not None)
    return {"type": type(order).__name__, "count": len(order), "unknown": sum(node not in index for node in order),
            "each_once": len(position) == len(order) == len(index), "consumers_first": consumed_before,
            "violations": seen.violations}


@probe("test_backward_order", iterative=True,
       clauses={"every node reachable, each exactly once, after all its consumers": "_valid_order_seen",
                "output.grad_fn first, AccumulateGrad nodes included, None edges skipped (chains: one valid order)":
                    "_chained_graph(draw, ops)",
                "repeated inputs (x * x)": "square",
                "graphs where depth-first or breadth-first gets the order wrong": "skewed",
                "iterative: a chain of 10,000 ops, no function calling itself": "chain",
                "iterative: deep graphs with branches": "branchy",
                "graphs of any size, a single op on a leaf included": "draw.sizes(0, 30, 15)",
                "random graphs (diamonds, fan-in, several leaves and heads)": "examples(draw, GRAPHS, 40)"})
def backward_order(ns: Namespace, draw: Draw) -> list:
    """backward_order: every node once, each after all its consumers, also on deep graphs, iteratively"""
    skewed, square, chain, branchy = _fixed_graphs(draw)
    chained = [_chained_graph(draw, ops) for ops in draw.sizes(0, 30, 15)]
    exact = [outcome(_order_seen, ns["backward_order"], out) for out in [skewed, square, chain, branchy, *chained]]
    return exact + [outcome(_valid_order_seen, ns["backward_order"], _dag(draw, spec))
                    for spec in examples(draw, GRAPHS, 40)]


def _penalty_seen(gradient_penalty: Callable, critic: torch.nn.Module, x: torch.Tensor) -> dict:
    """The penalty, what the call left in .grad (parameters and x), and the gradient the penalty sends
    to each parameter (None: no path), taken with autograd.grad so nothing accumulates."""
    params = list(critic.parameters())
    grads_before = [None if p.grad is None else p.grad.clone() for p in params]
    x_before, x_requires_grad = x.detach().clone(), x.requires_grad
    with forbidden(calls={"torch.autograd.backward": torch.autograd.backward}) as seen:
        penalty = gradient_penalty(critic, x)
    grads_after = [None if p.grad is None else p.grad.clone() for p in params]
    left = [after is not None if before is None else not torch.equal(before, after)
            for before, after in zip(grads_before, grads_after, strict=True)]
    observed = {"penalty": penalty.detach(), "shape": list(penalty.shape), "requires_grad": bool(penalty.requires_grad),
                "grad_changed_by_call": left, "x_change": x.detach() - x_before,
                "x_requires_grad": x.requires_grad == x_requires_grad, "x_grad": x.grad, "violations": seen.violations}
    observed["param_grads"] = outcome(lambda: list(torch.autograd.grad(penalty, params, allow_unused=True)))
    return observed


def _set_params(module: torch.nn.Module, draw: Draw, scale: float) -> torch.nn.Module:
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(draw.randn(*p.shape) * scale)
    return module


# atol 1e-5: a float32 conv critic's parameter gradients cancel to ~1e-3, where a correct per-sample loop
# differs from a batched solution by ~1.4e-6 (2 draws in 100 at atol=1e-6); every wrong solution misses by far more.
@probe("test_gradient_penalty", rtol=1e-4, atol=1e-5, forbid=(".backward",),
       clauses={"mean_i (||grad of sample i's score w.r.t. its own input||_2 - 1)^2, a 0-d tensor": "(mlp, draw.randn",
                "the 2-norm over all of a sample's elements (images (N, 1, 8, 8))": "1, 8, 8)",
                "scores shaped (N, 1) or (N,)": "flat_scores",
                "differentiable w.r.t. the parameters through the input gradient": "_penalty_seen",
                "leaves every parameter's .grad as it was (parameters that already hold one)": "p.grad = draw.randn",
                "does not modify x or its requires_grad": "contracts",
                "an x that requires grad": ".requires_grad_())",
                "a batch of one": "draw.randn(1, d)",
                "a zero input gradient: norm 0, finite parameter gradients": "with_dead_row",
                "float32 and float64": "dtype=torch.float64"})
def gradient_penalty(ns: Namespace, draw: Draw) -> list:
    """gradient_penalty: per-sample input-gradient norms over all of a sample's elements, (norm - 1)^2 averaged,
    differentiable w.r.t. the parameters, no .grad written; (N, 1) and (N,) scores, 2-D and image inputs, N = 1,
    a sample with a zero input gradient"""
    nn = torch.nn
    fn = ns["gradient_penalty"]
    d, hidden = draw.randint(2, 6), draw.randint(3, 8)
    mlp = _set_params(nn.Sequential(nn.Linear(d, hidden), nn.Tanh(), nn.Linear(hidden, 1)), draw, 0.7)
    flat_scores = _set_params(nn.Sequential(nn.Linear(d, hidden), nn.Softplus(), nn.Linear(hidden, 1), nn.Flatten(0)),
                              draw, 0.7)
    channels = draw.randint(2, 4)
    conv = _set_params(nn.Sequential(nn.Conv2d(1, channels, 3, padding=1), nn.Tanh(), nn.Flatten(),
                                     nn.Linear(channels * 64, 1)), draw, 0.3)
    conv_flat = nn.Sequential(conv, nn.Flatten(0))
    wide = _set_params(nn.Sequential(nn.Linear(d, hidden), nn.Tanh(), nn.Linear(hidden, 1)), draw, 3.0)
    # The boundary: a sample whose input gradient is exactly zero (a zero row into a bias-free ReLU layer).
    # Its norm is 0, where sqrt(sum of squares) has no derivative: NaN parameter gradients, unlike norm().
    dead = _set_params(nn.Sequential(nn.Linear(d, hidden, bias=False), nn.ReLU(), nn.Linear(hidden, 1)), draw, 0.7)
    with_dead_row = torch.cat([draw.randn(draw.randint(2, 6), d), torch.zeros(1, d)])
    cases = [
        (mlp, draw.randn(draw.randint(3, 8), d)),
        (flat_scores, draw.randn(draw.randint(3, 8), d)),
        (conv, draw.randn(draw.randint(2, 5), 1, 8, 8)),
        (conv_flat, draw.randn(draw.randint(2, 5), 1, 8, 8)),
        (mlp, draw.randn(1, d)),
        (wide, draw.randn(draw.randint(3, 8), d) * 2),
        (flat_scores, draw.randn(draw.randint(3, 8), d).requires_grad_()),
        (mlp, draw.randn(draw.randint(3, 8), d, dtype=torch.float64)),
        (dead, with_dead_row[torch.randperm(len(with_dead_row), generator=draw.gen)]),
    ]
    observations = []
    for i, (critic, x) in enumerate(cases):
        critic = critic.double() if x.dtype == torch.float64 else critic.float()
        critic.zero_grad(set_to_none=True)
        if i % 2:  # parameters that already hold a gradient
            for p in critic.parameters():
                p.grad = draw.randn(*p.shape).to(p.dtype)
        observations.append(outcome(_penalty_seen, fn, critic, x))
    return observations


def _by_module_seen(saved_bytes_by_module: Callable, model: torch.nn.Module, x: torch.Tensor,
                    no_grad: bool = False) -> dict:
    """The dict (twice in a row), whether it measured with saved-tensor hooks, and hooks left behind."""
    with forbidden(count={"hooks": torch._C._autograd._push_saved_tensors_default_hooks}) as seen:
        with torch.set_grad_enabled(not no_grad):
            first = outcome(saved_bytes_by_module, model, x)
            second = outcome(saved_bytes_by_module, model, x)
    left = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    return {"first": first, "second": second, "used_saved_tensors_hooks": bool(seen.ops), "hooks_left": left}


class _OpsOutsideLeaves(torch.nn.Module):
    """A non-leaf module whose own forward runs ops that save tensors (charged to no leaf)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).sin() * x


class _WithIdleLeaf(torch.nn.Module):
    """A model with a leaf its forward never calls: "every leaf that ran" leaves it out."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.used = torch.nn.Linear(width, width)
        self.idle = torch.nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.used(x).tanh()


@probe("test_saved_bytes_by_module",
       clauses={"{leaf name: bytes packed while it ran} for the digits CNN": "_by_module_seen(fn, default",
                "other widths of the CNN": "narrow",
                "float64 (element_size counts)": ".double()",
                "a frozen feature extractor": "frozen",
                "a call under no_grad (0 for a leaf that saved nothing)": "no_grad=True",
                "a module instance used twice in one forward (counted each time)": "shared",
                "ops outside any leaf charged to no leaf": "_OpsOutsideLeaves",
                "a model that is itself a leaf (name \"\")": "leaf, draw.randn",
                "only the leaves that ran": "_WithIdleLeaf",
                "an input that requires grad": ".requires_grad_())",
                "a batch of one": "batch(1)",
                "measured with saved_tensors_hooks, every hook removed, twice on one model": "_by_module_seen",
                "the model left as it was (mode, parameters)": "contracts"})
def saved_bytes_by_module(ns: Namespace, draw: Draw) -> list:
    """saved_bytes_by_module: bytes packed per leaf module of the digits CNN (widths, float64, frozen features,
    no_grad, a shared module, a leaf model, ops outside any leaf, a leaf that never runs), measured with saved_tensors_hooks, hooks removed, twice in a row"""
    from labutils import digits

    nn = torch.nn
    fn = ns["saved_bytes_by_module"]
    images = digits.load(seed=draw.randint(0, 3)).test.x
    start = draw.randint(0, 200)

    def batch(n: int) -> torch.Tensor:
        return images[start:start + n].clone()

    torch.manual_seed(draw.randint(0, 10_000))
    default = digits.DigitsCNN()
    narrow = digits.DigitsCNN(channels=draw.randint(2, 8), hidden=draw.randint(8, 40))
    frozen = digits.DigitsCNN(channels=draw.randint(4, 12))
    frozen.features.requires_grad_(False)
    act = draw.choice([nn.Tanh(), nn.Sigmoid(), nn.ReLU()])
    width = draw.randint(3, 7)
    shared = nn.Sequential(nn.Linear(width, width), act, nn.Linear(width, width), act)
    leaf = nn.Linear(width, draw.randint(2, 5))
    return [
        _by_module_seen(fn, default, batch(draw.randint(4, 32))),
        _by_module_seen(fn, narrow, batch(draw.randint(1, 8))),
        _by_module_seen(fn, digits.DigitsCNN(channels=draw.randint(2, 6)).double(), batch(3).double()),
        _by_module_seen(fn, frozen, batch(draw.randint(2, 9))),
        _by_module_seen(fn, default, batch(5), no_grad=True),
        _by_module_seen(fn, shared, draw.randn(draw.randint(2, 6), width)),
        _by_module_seen(fn, leaf, draw.randn(draw.randint(2, 6), width)),
        _by_module_seen(fn, leaf, draw.randn(draw.randint(2, 6), width).requires_grad_()),
        _by_module_seen(fn, default, batch(draw.randint(2, 6)).requires_grad_()),
        _by_module_seen(fn, nn.Sequential(_OpsOutsideLeaves(width), nn.Linear(width, 2)), draw.randn(3, width)),
        _by_module_seen(fn, _WithIdleLeaf(width), draw.randn(draw.randint(2, 6), width)),
        _by_module_seen(fn, narrow, batch(1)),
    ]


def _where(op: Callable) -> Callable:
    """A loss whose forward is finite: op(t) where t > 0, 0 elsewhere (the NaN is masked, not removed)."""
    return lambda t: torch.where(t > 0, op(t), 0.0).sum()


def _nan_seen(nan_node: Callable, loss_fn: Callable, x: torch.Tensor, anomaly_on: bool) -> dict:
    """nan_node's answer, and x (values, grad, requires_grad) and anomaly mode after the call, entered
    with anomaly mode ``anomaly_on`` (a solution that switches it off at the end fails the "on" cases)."""
    before, requires_grad = x.detach().clone(), x.requires_grad
    torch.autograd.set_detect_anomaly(anomaly_on)
    answer = outcome(nan_node, loss_fn, x)
    anomaly = torch.is_anomaly_enabled()
    torch.autograd.set_detect_anomaly(False)
    return {"node": answer, "x_change": x.detach() - before, "x_grad": x.grad,
            "requires_grad_kept": x.requires_grad == requires_grad, "anomaly_left_on": anomaly}


@probe("test_nan_node",
       clauses={"the type name of the first backward node that returns a NaN (sqrt, log, pow, division, acos)":
                    "_where(torch.sqrt)",
                "None when every gradient stays finite": "(t.sin() * t).sum() + t.pow(2).mean()",
                "a NaN source upstream of another one": "(t.sqrt() + k).log()",
                "a NaN only in the gradient of an op's second input": "torch.mul(t.log(), t.exp())",
                "float32 and float64": "f32",
                "x, its .grad and its requires_grad left as they were": "contracts",
                "an x that requires grad and already holds a .grad": "held.grad = ",
                "anomaly mode left as found (on or off)": "anomaly_on=index % 3 == 1",
                "x of any shape (0-d included)": "zero_d",
                "faults in any order (an inf before the NaN, an inf alone)": "_fault_lists(draw)"})
def nan_node(ns: Namespace, draw: Draw) -> list:
    """nan_node: the first backward node returning NaN (sqrt, log, pow, reciprocal, acos, chained sources,
    an inf before it), None when no gradient is NaN; x, x.grad, requires_grad and anomaly mode left as found"""
    fn = ns["nan_node"]
    k = draw.randint(2, 5)

    def mixed(n: int, dtype: torch.dtype) -> torch.Tensor:
        """n values, some <= 0 (the masked ones), the rest positive; one exact zero."""
        t = draw.randn(n, dtype=dtype) * k
        t[draw.randint(0, n - 1)] = 0.0
        t[draw.randint(0, n - 1)] = -abs(float(t[0])) - 1
        return t

    f64, f32 = torch.float64, torch.float32
    n = draw.randint(3, 8)
    cases = [
        (_where(torch.sqrt), mixed(n, f32)),
        (_where(torch.log), mixed(n, f64)),
        (lambda t: torch.where(t != 0, 1 / t, 0.0).sum(), mixed(n, f32)),
        (lambda t: (t.pow(draw.choice([0.5, 0.25, 0.75])) * 0).sum(), torch.zeros(n, dtype=f64)),
        (lambda t: torch.where(t.abs() < 1, t.acos(), 0.0).sum(), torch.rand(n, generator=draw.gen) * 4 - 2),
        (lambda t: torch.where(t > 0, (t.sqrt() + k).log(), 0.0).sum(), mixed(n, f64)),
        (lambda t: torch.where(t > 0, torch.where(t > 1, t.log(), 0.0).sqrt(), 0.0).sum(),
         torch.tensor([-1.0, 0.5, 2.0 + k])),
        (lambda t: torch.where(t > 0, t.sqrt(), 0.0).sum() * k, (draw.randn(n).abs() + 0.1).requires_grad_()),
        (lambda t: (t.sin() * t).sum() + t.pow(2).mean(), draw.randn(n, dtype=f64)),
        (lambda t: torch.where(t > 0, t.sqrt(), 0.0).sum(), mixed(n, f32).requires_grad_()),
        (lambda t: (t.exp() * k).sum().log(), draw.randn(n)),
        # A node returns one gradient per input: here MulBackward0's gradient for its second input
        # (0 * log(t), t <= 0) is the first NaN, its first one (0 * exp(t)) is finite.
        (lambda t: torch.where(t > 0, torch.mul(t.log(), t.exp()), 0.0).sum(), mixed(n, f64)),
    ]
    held = mixed(n, f64).requires_grad_()
    held.grad = draw.randn(n, dtype=f64)
    zero_d = torch.tensor(-0.5 - draw.random.random(), dtype=f64)
    cases += [(_where(torch.log), held), (_where(torch.sqrt), zero_d)]
    cases += [(_sum_of(terms), mixed(n, draw.choice([f32, f64]))) for terms in _fault_lists(draw)]
    return [_nan_seen(fn, loss_fn, x, anomaly_on=index % 3 == 1) for index, (loss_fn, x) in enumerate(cases)]


# Losses that add up faults in any order: a NaN born in sqrt or log (masked), an inf born in sqrt or pow
# at an exact 0 with no NaN after it, a finite term. The engine runs the later term's nodes first, so
# drawn orders put an inf before a NaN, an inf alone (the answer is None), or several NaN sources.
FAULT_TERMS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sqrt_nan": lambda t: torch.where(t > 0, t.sqrt(), 0.0).sum(),
    "log_nan": lambda t: torch.where(t > 0, t.log(), 0.0).sum(),
    "sqrt_inf": lambda t: t.clamp(min=0).sqrt().sum(),
    "pow_inf": lambda t: t.clamp(min=0).pow(0.25).sum(),
    "finite": lambda t: (t.sin() * t).sum(),
}
FAULTS = st.lists(st.sampled_from(sorted(FAULT_TERMS)), min_size=1, max_size=4)
# The boundaries every run has: an inf met before the NaN, an inf and no NaN, two NaN sources.
BOUNDARY_FAULTS = [["sqrt_nan", "pow_inf"], ["sqrt_inf"], ["log_nan", "finite", "sqrt_nan"]]


def _fault_lists(draw: Draw) -> list[list[str]]:
    """The boundary fault lists, then twelve drawn ones."""
    return BOUNDARY_FAULTS + examples(draw, FAULTS, 12)


def _sum_of(terms: list[str]) -> Callable[[torch.Tensor], torch.Tensor]:
    """The loss that adds the terms named, created in that order."""
    return lambda t: sum((FAULT_TERMS[name](t) for name in terms[1:]), FAULT_TERMS[terms[0]](t))
