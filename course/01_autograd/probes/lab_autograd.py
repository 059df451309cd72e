"""Probes of lab_autograd: each drives one exercise on inputs and graphs drawn for this grading run.

The probes build tensors, functions and graphs from the draw, call the student's code on them and
return what it produced: gradients, forward values, the gradient that reached x after a backward
with a drawn upstream gradient, the order of graph nodes (as indices of the probe's own walk) and
byte counts. The reference values come from running the same probe after the source notebook.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from graders.probing import Draw, Namespace, outcome, probe
from graders.rules import forbidden

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


@probe("test_numerical_gradient")
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
    cases = [
        _gradient_seen(fn, smooth, draw.randn(draw.randint(1, 4), draw.randint(1, 4), dtype=torch.float64)),
        _gradient_seen(fn, through_numpy, torch.rand(draw.randint(3, 6), dtype=torch.float64, generator=draw.gen)),
        _gradient_seen(fn, lambda t: torch.exp(k * t).sum(), torch.rand(4, dtype=torch.float64, generator=draw.gen)),
        _gradient_seen(fn, lambda t: (t ** 3).sum(), torch.rand(5, dtype=torch.float64, generator=draw.gen),
                       eps=draw.choice([5e-3, 1e-2, 2e-2, 3e-2])),
        _gradient_seen(fn, smooth, draw.randn(draw.randint(2, 4), 3, dtype=torch.float64).t()),
        _gradient_seen(fn, lambda t: (c * t).sum(), quarters, eps=0.5),  # float32, exact arithmetic
    ]
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


@probe("test_stable_softplus")
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
    ]
    return [outcome(_softplus_seen, apply, x, draw.randn(*x.shape, dtype=x.dtype) * 2) for x in inputs]


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


@probe("test_grad_reverse")
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


def _chained_graph(draw: Draw, ops: int) -> torch.Tensor:
    """A graph whose only valid backward order is unique: every op consumes the previous result.

    One leaf, each op takes the previous tensor and possibly an earlier one (shared nodes, skips)
    or a constant without grad (a None edge); so the nodes form one chain plus extra edges that
    all point down it.
    """
    x = draw.randn(2).requires_grad_()
    pool = [x]
    for _ in range(ops):
        prev, other = pool[-1], draw.choice(pool)
        op = draw.choice(["add", "mul", "sub", "sin", "exp", "const", "square"])
        if op == "add":
            pool.append(prev + other)
        elif op == "mul":
            pool.append(prev * other)
        elif op == "sub":
            pool.append(other - prev)
        elif op == "sin":
            pool.append(prev.sin())
        elif op == "exp":
            pool.append((prev * 0.1).exp())
        elif op == "const":
            pool.append(prev * draw.randn(2))
        else:
            pool.append(prev * prev)
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


@probe("test_backward_order")
def backward_order(ns: Namespace, draw: Draw) -> list:
    """backward_order: every node once, each after all its consumers, also on deep graphs, iteratively"""
    outputs = _fixed_graphs(draw) + [_chained_graph(draw, draw.randint(5, 30)) for _ in range(15)]
    return [outcome(_order_seen, ns["backward_order"], out) for out in outputs]


def _hvp_seen(hvp: Callable, f: Callable, x: torch.Tensor, v: torch.Tensor) -> dict:
    """hvp's result, whether it carries a graph, x, x.requires_grad and x.grad after the call, what it
    used that the exercise rules out (.backward(), torch.func, torch.autograd.functional) and how many
    times it ran the autograd engine (two passes; a Hessian row by row takes one per element)."""
    before = x.detach().clone()
    with forbidden(calls={"torch.autograd.backward": torch.autograd.backward}, modules=DIFFERENTIATING_MODULES,
                   count={"autograd engine runs": torch.autograd.graph._engine_run_backward}) as seen:
        got = hvp(f, x, v)
    return {"hv": got, "result_requires_grad": bool(got.requires_grad), "result_node": type(got.grad_fn).__name__,
            "x_change": x.detach() - before, "x_requires_grad": bool(x.requires_grad), "x_grad": x.grad,
            "violations": seen.violations, "engine_runs": seen.ops}


@probe("test_hvp")
def hvp(ns: Namespace, draw: Draw) -> list:
    """hvp: H(x) v by two torch.autograd.grad passes (no .backward(), no Hessian), detached, x and x.grad untouched"""
    a, shift = 0.5 + draw.random.random(), draw.randint(1, 3)
    quad = draw.randn(6, 6, dtype=torch.float64)

    def f_roll(t: torch.Tensor) -> torch.Tensor:
        return (t.sin() * t.roll(shift, dims=-1)).sum() * a + (t ** 4).sum() / 4 + t.tanh().prod()

    def f_quadratic(t: torch.Tensor) -> torch.Tensor:
        return t @ quad @ t + (t.exp() * a).sum()

    def f_mixed(t: torch.Tensor) -> torch.Tensor:
        return (t.exp() * a).sum() * (t ** 2).sum() + t.cos().sum()

    cases = []
    for f, shape in [(f_roll, (6,)), (f_roll, (3, 4)), (f_quadratic, (6,)), (f_mixed, (2, 3)), (f_mixed, (5,))]:
        x = draw.randn(*shape, dtype=torch.float64)
        cases.append((f, x, draw.randn(*shape, dtype=torch.float64)))
    grad_x = draw.randn(5, dtype=torch.float64).requires_grad_()
    cases.append((f_roll, grad_x, draw.randn(5, dtype=torch.float64)))
    with_grad = draw.randn(4, dtype=torch.float64).requires_grad_()
    with_grad.grad = draw.randn(4, dtype=torch.float64)
    cases.append((f_mixed, with_grad, draw.randn(4, dtype=torch.float64)))
    return [outcome(_hvp_seen, ns["hvp"], f, x, v) for f, x, v in cases]


def _no_grad_exp(t: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return t.exp()


@probe("test_saved_bytes")
def saved_bytes(ns: Namespace, draw: Draw) -> list:
    """saved_bytes: bytes of what autograd packs (measured with saved_tensors_hooks), per dtype, views, no_grad, each call from zero"""
    fn = ns["saved_bytes"]

    def leaf(n: int, dtype: torch.dtype = torch.float32, grad: bool = True) -> torch.Tensor:
        return draw.randn(n).to(dtype).requires_grad_(grad)

    rows, inner, cols = draw.randint(2, 9), draw.randint(2, 9), draw.randint(2, 9)
    x = leaf(draw.randint(20, 200))
    step, half = draw.randint(2, 5), draw.randint(3, 10)
    calls = [
        (lambda t: t.exp(), x), (lambda t: t.sin(), leaf(draw.randint(5, 50), torch.float64)),
        (lambda t: t.exp(), leaf(draw.randint(5, 50), torch.float16)), (lambda t: t * t, x),
        (lambda p, q: p @ q, draw.randn(rows, inner).requires_grad_(), draw.randn(inner, cols).requires_grad_()),
        (lambda p, q: p @ q, draw.randn(rows, inner), draw.randn(inner, cols).requires_grad_()),
        (lambda t: t + 1, x), (lambda t: t.sin(), leaf(draw.randint(5, 50), grad=False)), (_no_grad_exp, x),
        (lambda t: t[::step].sin(), x), (lambda t: t[step:].sin(), x),
        (lambda t: t[:half] * t[half:2 * half], x), (lambda t: t.tanh().sigmoid(), x),
        (lambda t: t.exp(), x), (lambda t: t.exp(), x),
    ]
    return [_measured_with_hooks(fn, call) for call in calls]


def _measured_with_hooks(saved_bytes: Callable, call: tuple) -> dict:
    """saved_bytes' count for one call, and whether it installed saved-tensor hooks to measure it
    (the exercise says how: ``torch.autograd.graph.saved_tensors_hooks``, or a subclass of it)."""
    with forbidden(count={"hooks": torch._C._autograd._push_saved_tensors_default_hooks}) as seen:
        got = outcome(saved_bytes, *call)
    return {"bytes": got, "used_saved_tensors_hooks": bool(seen.ops)}
