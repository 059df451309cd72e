"""Probes of lab_distributed: each drives one exercise on inputs drawn for this grading run.

Four exercises run on real gloo ranks through :func:`labutils.launch.launch`, each on 2, 3 and 4 ranks
(``WORLDS``: a ring that only exchanges with its neighbours once is right on 2 ranks and wrong on more). A rank cannot import
this file (the grader hands it over as text), so the rank functions live in ``RANK_SOURCE``: it is
compiled under a ``<...>`` file name registered in :mod:`linecache`, which is how ``launch`` finds
the source to ship, next to the student's function (shipped by source from the notebook, as in the
lab's own test cells). Ranks return their raw results; nothing here computes an expected value.
"""

from __future__ import annotations

import linecache
import os
import socket
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch._C._distributed_c10d import Store
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler

from graders.inside.probing import Draw, Namespace, outcome, probe
from graders.inside.rules import COLLECTIVES, POINT_TO_POINT, collective_methods, forbidden, methods
from labutils import digits
from labutils.digits import DigitsCNN
from labutils.launch import launch

WORLDS = (2, 3, 4)
LAUNCH_TIMEOUT = 120.0
# ring_all_reduce may talk only through send/recv: the rendezvous store is a channel too.
STORE_METHODS = ("set", "get", "add", "append", "compare_set", "multi_get", "multi_set", "queue_push", "queue_pop")

RANK_SOURCE = '''
def average_gradients_ranks(cases: list) -> list:
    """Per case: one backward on rank-specific data (frozen and unused parameters), average_gradients; and
    the gradient tensors held before the call, read after it (in place: they hold the mean)."""
    rank = dist.get_rank()
    observed = []
    for seed, n_in, hidden, n_out, batch in cases:
        torch.manual_seed(seed)
        used, frozen, unused = nn.Linear(n_in, hidden), nn.Linear(hidden, n_out), nn.Linear(n_in, 1)
        frozen.weight.requires_grad_(False)
        model = nn.ModuleDict({"used": used, "frozen": frozen, "unused": unused})
        x = torch.randn(batch, n_in, generator=torch.Generator().manual_seed(seed + 7919 * (rank + 1)))
        frozen(torch.tanh(used(x))).pow(2).sum().backward()
        held = {name: p.grad for name, p in model.named_parameters()}
        average_gradients(model)
        observed.append({"grads": {name: (None if p.grad is None else p.grad.clone())
                                   for name, p in model.named_parameters()},
                         "held": {name: (None if g is None else g.clone()) for name, g in held.items()},
                         "params": {name: p.detach().clone() for name, p in model.named_parameters()}})
    return observed


def ring_ranks(cases: list) -> list:
    """Per case: ring_all_reduce of rank-specific data, and the collectives or side channels it used."""
    rank = dist.get_rank()
    channels = {**collective_methods(), **methods(Store, STORE_METHODS), "open": open, "os.open": os.open,
                "socket.socket": socket.socket}
    observed = []
    for shape, dtype, seed, fill, transposed in cases:
        g = torch.Generator().manual_seed(seed + 104729 * rank)
        x = torch.randn(shape[::-1], generator=g, dtype=dtype).permute(*reversed(range(len(shape)))) if transposed \
            else torch.randn(shape, generator=g, dtype=dtype)
        with forbidden(aten=COLLECTIVES, allow=POINT_TO_POINT, calls=channels) as seen:
            out = ring_all_reduce(x)
        input_after_call = x.clone()
        x.fill_(fill)
        observed.append({"out": out, "input_after_call": input_after_call, "violations": seen.violations})
    return observed


def accumulate_ranks(cases: list) -> list:
    """Per case: accumulate_with_no_sync on a DDP model whose comm hook counts the all-reduces (and every
    collective that runs, however it was issued)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    observed = []
    for seed, n_micro, micro, n_in, hidden, lr in cases:
        torch.manual_seed(seed)
        model = DDP(nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, 1)))
        calls = []

        def counting_hook(state, bucket, calls=calls):
            calls.append(bucket.index())
            return allreduce_hook(state, bucket)

        model.register_comm_hook(None, counting_hook)
        g = torch.Generator().manual_seed(seed + 1)
        sizes = [micro + k % 2 for k in range(n_micro)]  # unequal micro-batches when there are several
        drawn = [[(torch.randn(size, n_in, generator=g), torch.randn(size, 1, generator=g)) for size in sizes]
                 for _ in range(world)]
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        batches = list(drawn[rank])
        with forbidden(aten=COLLECTIVES, calls=collective_methods()) as seen:
            accumulate_with_no_sync(model, optimizer, batches)
        observed.append({"all_reduces": len(calls), "collectives": seen.ops, "collective_calls": seen.violations,
                         "micro_batches_after": [[x.clone(), y.clone()] for x, y in batches],
                         "params": [p.detach().clone() for p in model.module.parameters()],
                         "grads": [None if p.grad is None else p.grad.clone() for p in model.module.parameters()]})
    return observed


def digits_ranks(cases: list) -> list:
    """Per case: global_batch_gradients on a DigitsCNN (same init on every rank) and the rows it forwarded."""
    rank = dist.get_rank()
    observed = []
    for seed, x, y in cases:
        torch.manual_seed(seed)
        model = DigitsCNN()
        assert isinstance(model, nn.Module)  # also ships nn, which the student's annotations name
        seen_rows = []
        model.register_forward_pre_hook(lambda module, args, seen_rows=seen_rows: seen_rows.append(args[0].clone()))
        result = global_batch_gradients(model, x.clone(), y.clone())
        observed.append({"returned": result is None, "rows": seen_rows,
                         "grads": [None if p.grad is None else p.grad.clone() for p in model.parameters()]})
    return observed
'''



# The rings' rule read from the source before it runs (graders.grader.vetting), beside the recorder's: no
# collective by name, no functional collectives, no store or process-group side channel. (The ranks
# run the student's function in other processes: probes that launch them get it unwatched.)
RING_FORBIDS = ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
                "all_to_all", "all_to_all_single", "broadcast", "gather", "scatter", "functional_collectives",
                "_functional_collectives", "_get_default_group", "_get_default_store", "Store", "TCPStore",
                "FileStore", "HashStore", "PrefixStore")


def rank_function(ns: Namespace, name: str, student_fn: str) -> Callable[..., Any]:
    """``name`` from ``RANK_SOURCE``, calling the student's ``student_fn``; shippable to the ranks by source."""
    filename = "<lab_distributed probe ranks>"
    linecache.cache[filename] = (len(RANK_SOURCE), None, RANK_SOURCE.splitlines(keepends=True), filename)
    scope: dict[str, Any] = {"__name__": "lab_distributed_probe_ranks", "torch": torch, "dist": dist, "nn": nn,
                             "F": F, "DDP": DDP, "allreduce_hook": allreduce_hook, "os": os, "socket": socket,
                             "Store": Store, "STORE_METHODS": STORE_METHODS, "forbidden": forbidden,
                             "methods": methods, "collective_methods": collective_methods,
                             "COLLECTIVES": COLLECTIVES, "POINT_TO_POINT": POINT_TO_POINT, "DigitsCNN": DigitsCNN,
                             student_fn: ns[student_fn]}
    exec(compile(RANK_SOURCE, filename, "exec"), scope)  # noqa: S102 - instructor code
    return scope[name]


def on_ranks(ns: Namespace, name: str, student_fn: str, cases: list, world: int) -> list:
    """Per case, what each rank observed running ``name(cases)`` on ``world`` gloo ranks.

    When the run fails (a rank raised, a deadlock timed out), every case observes the exception type.
    """
    ranks = outcome(launch, rank_function(ns, name, student_fn), world, cases, timeout=LAUNCH_TIMEOUT,
                    backend="gloo")
    if not (isinstance(ranks, list) and all(isinstance(r, list) and len(r) == len(cases) for r in ranks)):
        return [ranks] * len(cases)
    return [[per_rank[index] for per_rank in ranks] for index in range(len(cases))]


def on_every_world(ns: Namespace, name: str, student_fn: str, cases_for: Callable[[int], list]) -> dict:
    """``on_ranks`` on 2, 3 and 4 ranks, each world size with cases drawn for it."""
    return {f"{world} ranks": on_ranks(ns, name, student_fn, cases_for(world), world) for world in WORLDS}


@probe("test_average_gradients", contracts=False,
       clauses={"every existing gradient replaced by its mean over ranks, in place": "average_gradients_ranks",
                "frozen and unused parameters (no gradient) left without one": "average_gradients_ranks",
                "2, 3 and 4 ranks": "on_every_world",
                "the smallest layers and a batch of one": "(draw.randint(0, 10**6), 1, 1, 1, 1)"})
def average_gradients(ns: Namespace, draw: Draw) -> list:
    """average_gradients on real ranks: mean gradients in place, frozen and unused parameters left without one"""
    def cases(world: int) -> list:
        return [(draw.randint(0, 10**6), draw.randint(1, 6), draw.randint(1, 8), draw.randint(1, 4), draw.randint(1, 9))
                for _ in range(3)] + [(draw.randint(0, 10**6), 1, 1, 1, 1)]

    return on_every_world(ns, "average_gradients_ranks", "average_gradients", cases)


def ring_shape(draw: Draw, numel: int) -> tuple[int, ...]:
    """A shape of ``numel`` elements with 0 to 3 dimensions (0 only when ``numel`` is 1)."""
    if numel == 1 and draw.randint(0, 1):
        return ()
    dims = [numel]
    for _ in range(draw.randint(0, 2)):
        divisors = [d for d in range(1, dims[-1] + 1) if dims[-1] % d == 0]
        first = draw.choice(divisors)
        dims[-1:] = [first, dims[-1] // first]
    return tuple(dims)


@probe("test_ring_all_reduce", contracts=False, forbid=RING_FORBIDS,
       clauses={"a new tensor, the element-wise sum over ranks": "ring_ranks",
                "the input's shape and dtype (float32 and float64 in every world)": "dtypes[wide], dtypes[narrow]",
                "chunks by tensor_split: fewer elements than ranks, a multiple of W, one more":
                    "draw.randint(1, world - 1), world * draw.randint(1, 6)",
                "a 0-d input": "((), draw.choice([torch.float32, torch.float64])",
                "a non-contiguous input": "True)]",
                "the input left unchanged": "ring_ranks",
                "point-to-point calls only: no collective, no store, files or sockets": "ring_ranks",
                "2, 3 and 4 ranks": "on_every_world"})
def ring_all_reduce(ns: Namespace, draw: Draw) -> list:
    """ring_all_reduce on real ranks: sum over ranks, shape and dtype kept, input unchanged, point-to-point calls only, non-contiguous inputs"""
    def cases(world: int) -> list:
        # fewer elements than ranks (empty chunks), a multiple of the world size, one more, and larger odd sizes
        sizes = [draw.randint(1, world - 1), world * draw.randint(1, 6), world * draw.randint(1, 6) + 1,
                 draw.randint(20, 97), 2 * draw.randint(10, 40) + 1]
        dtypes = [draw.choice([torch.float32, torch.float64]) for _ in sizes]
        wide, narrow = draw.random.sample(range(len(sizes)), 2)
        dtypes[wide], dtypes[narrow] = torch.float64, torch.float32  # both in every world, whatever the draws
        drawn = [(ring_shape(draw, n), dtype, draw.randint(0, 10**6), float(draw.randint(100, 999)), False)
                 for n, dtype in zip(sizes, dtypes, strict=True)]
        # a non-contiguous input: a transposed matrix (no dimension of size 1)
        shape = (draw.randint(2, 7), draw.randint(2, 7))
        scalar = ((), draw.choice([torch.float32, torch.float64]), draw.randint(0, 10**6), float(draw.randint(100, 999)),
                  False)
        return [*drawn, scalar, (shape, draw.choice([torch.float32, torch.float64]), draw.randint(0, 10**6),
                                 float(draw.randint(100, 999)), True)]

    return on_every_world(ns, "ring_ranks", "ring_all_reduce", cases)


def shard_case(draw: Draw) -> dict[str, Any]:
    """Random DistributedSampler arguments, skipping drop_last with fewer items than ranks (no samples)."""
    while True:
        world_size = draw.randint(1, 7)
        case = {"n": draw.randint(1, 40), "world_size": world_size, "rank": draw.randint(0, world_size - 1),
                "epoch": draw.randint(0, 6), "seed": draw.randint(0, 200), "shuffle": bool(draw.randint(0, 1)),
                "drop_last": bool(draw.randint(0, 1))}
        if not (case["drop_last"] and case["n"] < world_size):
            return case


def short_dataset_case(draw: Draw, past_two_copies: bool) -> dict[str, Any]:
    """Fewer items than half the ranks: the padding repeats the list more than once.

    With ``past_two_copies`` the rank sits beyond the first ``2 n`` positions of the padded list.
    """
    world_size = draw.randint(3, 9)
    n = draw.randint(1, (world_size - 1) // 2)
    return {"n": n, "world_size": world_size,
            "rank": draw.randint(2 * n, world_size - 1) if past_two_copies else draw.randint(0, world_size - 1),
            "epoch": draw.randint(1, 6), "seed": draw.randint(0, 200), "shuffle": bool(draw.randint(0, 1)),
            "drop_last": False}


def drop_last_case(draw: Draw) -> dict[str, Any]:
    """drop_last with a dataset that does not divide evenly (or does), at least one item per rank."""
    world_size = draw.randint(2, 6)
    n = world_size * draw.randint(1, 6) + draw.randint(0, world_size - 1)
    return {"n": n, "world_size": world_size, "rank": draw.randint(0, world_size - 1), "epoch": draw.randint(0, 6),
            "seed": draw.randint(0, 200), "shuffle": bool(draw.randint(0, 1)), "drop_last": True}


SHARD_OPTIONS = ("epoch", "seed", "shuffle", "drop_last")


def defaults_case(draw: Draw, passed: tuple[str, ...]) -> dict[str, Any]:
    """Only ``passed`` of the optional arguments given, each at a value other than its default; the rest
    left to the signature's defaults. ``n`` does not divide by the world size and holds at least two items
    per rank, so drop_last changes the shard's length and a seed or epoch one off changes its order."""
    world_size = draw.randint(2, 6)
    case: dict[str, Any] = {"n": world_size * draw.randint(2, 6) + draw.randint(1, world_size - 1),
                            "world_size": world_size, "rank": draw.randint(0, world_size - 1)}
    given = {"epoch": draw.randint(1, 6), "seed": draw.randint(1, 200), "shuffle": False, "drop_last": True}
    return case | {key: given[key] for key in passed}


def empty_dataset_case(draw: Draw, shuffle: bool, drop_last: bool) -> dict[str, Any]:
    """An empty dataset (n = 0): the sampler yields nothing on every rank, with or without shuffling."""
    world_size = draw.randint(1, 6)
    return {"n": 0, "world_size": world_size, "rank": draw.randint(0, world_size - 1), "epoch": draw.randint(0, 6),
            "seed": draw.randint(0, 200), "shuffle": shuffle, "drop_last": drop_last}


@probe("test_shard_indices", forbid=("DistributedSampler",),
       clauses={"the indices DistributedSampler yields on rank after set_epoch(epoch)": "shard_case(draw)",
                "randperm from a generator seeded seed + epoch, or range(n) without shuffling": "shard_case(draw)",
                "padded by repeating the list from its start, as many times as needed": "short_dataset_case(draw",
                "drop_last: num_samples ceil((n - W) / W), the list cut": "drop_last_case(draw)",
                "the defaults epoch 0, seed 0, shuffle True, drop_last False": "defaults_case(draw, passed)",
                "an empty dataset": "empty_dataset_case(draw",
                "one rank": '"world_size": 1',
                "no DistributedSampler code runs": "_without_sampler",
                "the global random state left alone": "_without_sampler",
                "no other side effect": "contracts"})
def shard_indices(ns: Namespace, draw: Draw) -> list:
    """shard_indices on random sizes, world sizes, ranks, epochs, seeds, shuffle and drop_last, without DistributedSampler or the global RNG"""
    cases = [short_dataset_case(draw, k % 2 == 0) for k in range(8)] + [drop_last_case(draw) for _ in range(8)]
    # the signature's defaults: none passed, one at a time, and drawn subsets
    subsets = [(), *((key,) for key in SHARD_OPTIONS)]
    subsets += [tuple(key for key in SHARD_OPTIONS if draw.randint(0, 1)) for _ in range(6)]
    cases += [defaults_case(draw, passed) for passed in subsets]
    cases += [empty_dataset_case(draw, shuffle, drop_last) for shuffle in (False, True) for drop_last in (False, True)]
    cases += [{"n": draw.randint(1, 9), "world_size": 1, "rank": 0, "epoch": draw.randint(0, 6),
               "seed": draw.randint(0, 200), "shuffle": shuffle, "drop_last": bool(draw.randint(0, 1))}
              for shuffle in (False, True)]
    cases += [shard_case(draw) for _ in range(60)]
    # The caller's global RNG seed during each call: drawn (a constant could be restored by name), and
    # above every case's seed (those stay below 300).
    return [_without_sampler(ns["shard_indices"], case, draw.randint(10**6, 10**9)) for case in cases]


def _without_sampler(fn: Callable, case: dict[str, Any], global_seed: int) -> dict[str, Any]:
    """``fn(**case)`` (or the exception it raised), whether it ran DistributedSampler's code, and the
    caller's global RNG after the call: the same numbers unless ``fn`` reseeded it or drew from it."""
    saved = torch.random.get_rng_state()
    torch.manual_seed(global_seed)
    with forbidden(calls={"torch.utils.data.DistributedSampler": DistributedSampler}) as seen:
        got = outcome(fn, **case)
    global_rng_next = torch.rand(3, dtype=torch.float64)
    torch.random.set_rng_state(saved)
    return {"indices": got, "violations": seen.violations, "global_rng_next": global_rng_next}


POISONS = ("inf", "nan", "bias-inf", "one-inf")


def scaler_schedule(draw: Draw, steps: int) -> dict[int, str]:
    """Steps to poison: always one inf gradient on the last layer's bias only, and one inf element in a
    gradient that is neither the last one nor a single element ("one-inf"), plus inf/NaN losses or more."""
    chosen = draw.random.sample(range(steps), draw.randint(2, 4))
    schedule = {chosen[0]: "bias-inf", chosen[1]: "one-inf"}
    schedule.update({step: draw.choice(POISONS) for step in chosen[2:]})
    return schedule


def poisoned_loss(model: nn.Sequential, x: torch.Tensor, y: torch.Tensor, kind: str | None,
                  victim: tuple[torch.Tensor, int]) -> tuple:
    """The step's loss, made non-finite as ``kind`` says; a hook handle to remove for ``bias-inf`` and
    ``one-inf`` (element ``victim[1]`` of ``victim[0]``'s gradient made inf, the others kept)."""
    loss = F.mse_loss(model(x), y)
    if kind == "inf":
        return loss * float("inf"), None
    if kind == "nan":
        return loss + float("nan"), None
    if kind == "bias-inf":
        return loss, model[-1].bias.register_hook(lambda grad: grad * float("inf"))
    if kind == "one-inf":
        param, index = victim
        mask = torch.ones(param.numel())
        mask[index] = float("inf")
        return loss, param.register_hook(lambda grad: grad * mask.view_as(grad))
    return loss, None


SCALER_LAYOUTS = ("one", "first-apart", "per-layer", "shuffled")


def param_groups(draw: Draw, model: nn.Sequential, layout: str, spare: nn.Linear | None) -> list[dict]:
    """The optimizer's parameter groups, laid out as ``layout`` says, each with its own learning rate and
    momentum (beside the optimizer's defaults); ``spare``'s parameters (never used: no gradient) join them."""
    params = list(model.parameters()) + ([] if spare is None else list(spare.parameters()))
    if layout == "one":
        split = [params]
    elif layout == "first-apart":
        split = [params[:2], params[2:]]
    elif layout == "per-layer":
        split = [params[k:k + 2] for k in range(0, len(params), 2)]
    else:  # shuffled, then cut into 2 or 3 groups that are not empty
        params = draw.random.sample(params, len(params))
        cuts = sorted(draw.random.sample(range(1, len(params)), draw.randint(1, 2)))
        split = [params[a:b] for a, b in zip([0, *cuts], [*cuts, len(params)], strict=True)]
    return [{"params": group, "lr": draw.choice([0.01, 0.02, 0.05]), "momentum": draw.choice([0.0, 0.5, 0.9])}
            for group in split]


def scaled_run(ns: Namespace, draw: Draw, layout: str, spare: bool) -> list:
    """One run of scaled_step: per step its return value, the state, the parameters and (clean steps)
    gradients; the optimizer's parameter groups laid out as ``layout`` says, with a layer that never runs
    among them when ``spare``."""
    steps, seed = draw.randint(5, 9), draw.randint(0, 10**6)
    schedule = scaler_schedule(draw, steps)
    torch.manual_seed(seed)
    width = draw.randint(3, 9)
    model = nn.Sequential(nn.Linear(4, width), nn.ReLU(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1))
    groups = param_groups(draw, model, layout, nn.Linear(width, 2) if spare else None)
    optimizer = torch.optim.SGD(groups, lr=0.05, momentum=0.5)
    # one-inf's victim: a parameter with a gradient, of more than one element, not the last one visited
    used = {id(p) for p in model.parameters()}
    order = [p for group in optimizer.param_groups for p in group["params"] if id(p) in used]
    victim = draw.choice([p for p in order[:-1] if p.numel() > 1])
    victim_element = draw.randint(0, victim.numel() - 1)
    growth = 1 if layout == "one" else 2 if layout == "first-apart" else draw.randint(1, 3)  # 1 and 2 every draw
    state = {"scale": float(2 ** draw.randint(4, 14)), "good_steps": 0, "growth_interval": growth}
    g = torch.Generator().manual_seed(seed + 1)
    observed = []
    for step in range(steps):
        x, y = torch.randn(16, 4, generator=g), torch.randn(16, 1, generator=g)
        loss, handle = poisoned_loss(model, x, y, schedule.get(step), (victim, victim_element))
        optimizer.zero_grad(set_to_none=step % 2 == 0)  # odd steps: gradients exist (zeros) before the call
        held = [p.grad for p in model.parameters()]
        stepped = outcome(ns["scaled_step"], loss, optimizer, state)
        if handle is not None:
            handle.remove()
        observed.append({"stepped": stepped, "scale": state.get("scale"), "good_steps": state.get("good_steps"),
                         "grads_updated_in_place": [g is not None and p.grad is g for p, g in zip(model.parameters(), held, strict=True)],
                         "params": [p.detach().clone() for p in model.parameters()],
                         "grads": None if step in schedule else [None if p.grad is None else p.grad.clone()
                                                                 for p in model.parameters()]})
    return observed


@probe("test_scaled_step",
       clauses={"(loss * scale).backward(), every gradient divided by the scale in place": "scaled_run(ns, draw, layout, spare)",
                "an inf or NaN in any gradient: no step, scale halved, good_steps 0, False":
                    "scaled_run(ns, draw, layout, spare)",
                "otherwise step, good_steps + 1, the scale doubled at growth_interval, True":
                    "scaled_run(ns, draw, layout, spare)",
                "state updated in place": "scaled_run(ns, draw, layout, spare)",
                "every parameter group of the optimizer, a parameter without a gradient": "SCALER_LAYOUTS",
                "gradients not zeroed afterwards; nothing else changed": "contracts"})
def scaled_step(ns: Namespace, draw: Draw) -> list:
    """scaled_step over several steps with overflows: return value, scale, growth, parameters, unscaled gradients, parameter groups"""
    # every layout of the parameter groups in every draw; a parameter without a gradient in two of them at least
    return [scaled_run(ns, draw, layout, spare) for layout, spare in
            zip(SCALER_LAYOUTS, (bool(draw.randint(0, 1)), True, bool(draw.randint(0, 1)), True), strict=True)]


@probe("test_accumulate_with_no_sync", contracts=False,
       clauses={"F.mse_loss(model(x), y) / len(micro_batches) accumulated over all micro-batches": "accumulate_ranks",
                "one all-reduce: no_sync for every backward but the last": "accumulate_ranks",
                "optimizer.step() once; the gradients not zeroed afterwards": "accumulate_ranks",
                "one micro-batch, and several": "n_micro in (1, draw.randint(2, 3), draw.randint(3, 5))",
                "micro-batches of unequal sizes (the loss divided by their number, not by rows)": "accumulate_ranks",
                "the caller's list of micro-batches left as it was": "accumulate_ranks",
                "2, 3 and 4 ranks": "on_every_world"})
def accumulate_with_no_sync(ns: Namespace, draw: Draw) -> list:
    """accumulate_with_no_sync on real ranks: one all-reduce, the large-batch gradient and step"""
    def cases(world: int) -> list:
        return [(draw.randint(0, 10**6), n_micro, draw.randint(1, 5), draw.randint(2, 6), draw.randint(2, 9),
                 draw.choice([0.05, 0.1, 0.2])) for n_micro in (1, draw.randint(2, 3), draw.randint(3, 5))]

    return on_every_world(ns, "accumulate_ranks", "accumulate_with_no_sync", cases)


_DIGITS: dict[str, torch.Tensor] = {}


def digits_train() -> tuple[torch.Tensor, torch.Tensor]:
    """The digits train split (images, labels), loaded once per grading process."""
    if not _DIGITS:
        train = digits.load(seed=0).train
        _DIGITS.update(x=train.x, y=train.y)
    return _DIGITS["x"], _DIGITS["y"]


@probe("test_global_batch_gradients", rtol=1e-4, atol=1e-6, contracts=False,
       clauses={"the model runs only on rows r, r + W, r + 2W ...": "digits_ranks",
                "every p.grad on every rank: the whole batch's mean-loss gradient": "digits_ranks",
                "N that divides by W, and N that does not (shards differ by one row)": "world * draw.randint(2, 6) +",
                "one row per rank": "world, world - 1]",
                "fewer rows than ranks (a shard of none)": "world, world - 1]",
                "returns nothing": "digits_ranks",
                "2, 3 and 4 ranks": "on_every_world"})
def global_batch_gradients(ns: Namespace, draw: Draw) -> dict:
    """global_batch_gradients on a DigitsCNN on 2, 3, 4 ranks: rows r::W forwarded, the global-batch gradient"""
    x_all, y_all = digits_train()

    def cases(world: int) -> list:
        # a batch that divides by the world size, and batches that do not (uneven shards)
        sizes = [world * draw.randint(2, 6), world * draw.randint(2, 6) + draw.randint(1, world - 1),
                 world * draw.randint(1, 4) + world - 1, world, world - 1]
        out = []
        for n in sizes:
            start = draw.randint(0, len(y_all) - n)
            out.append((draw.randint(0, 10**6), x_all[start:start + n].clone(), y_all[start:start + n].clone()))
        return out

    return on_every_world(ns, "digits_ranks", "global_batch_gradients", cases)


TRACE_OPS = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier")
FAULTS = ("missing", "extra", "op", "shape", "shape+op", "late")


def add_fault(draw: Draw, traces: list[list], kind: str) -> None:
    """One fault of ``kind`` on 1 to W-1 drawn ranks (one rank when W is 1), at a drawn step."""
    world, longest = len(traces), max(len(t) for t in traces)
    if not longest:  # a single rank whose log an earlier fault emptied
        return
    step = draw.randint(0, longest - 1)
    for victim in draw.random.sample(range(world), draw.randint(1, max(1, world - 1))):
        trace = traces[victim]
        if step >= len(trace):  # an earlier fault cut this rank short: a call past its end
            trace.append((draw.choice(TRACE_OPS), (draw.randint(1, 5),)))
        elif kind == "missing":
            del trace[step:]
        elif kind == "extra":
            trace.append(("all_reduce", (draw.randint(1, 4),)))
        elif kind == "op":
            trace[step] = (draw.choice([o for o in TRACE_OPS if o != trace[step][0]]), trace[step][1])
        elif kind in ("shape", "shape+op") and trace[step][0] != "barrier":
            trace[step] = (trace[step][0], (*trace[step][1], draw.randint(2, 4)))
            if kind == "shape+op" and step + 1 < len(trace):
                trace[step + 1] = ("barrier" if trace[step + 1][0] != "barrier" else "all_reduce", (3,))
        elif kind == "late" and step + 1 < len(trace):
            trace[step + 1], trace[step] = trace[step], trace[step + 1]


def call_trace(draw: Draw, world: int) -> list:
    """Per-rank collective call sequences: identical, or with 1 to 3 faults of drawn kinds at drawn steps,
    on drawn ranks (faults combine: an op and a shape fault at one position, a missing call after an
    earlier mismatch)."""
    common = []
    for _ in range(draw.randint(1, 6)):
        op = draw.choice(TRACE_OPS)
        common.append((op, ()) if op == "barrier" else (op, tuple(draw.randint(1, 5) for _ in range(draw.randint(1, 2)))))
    traces = [list(common) for _ in range(world)]
    for _ in range(draw.choice([0, 1, 1, 2, 2, 3])):
        add_fault(draw, traces, draw.choice(FAULTS))
    return traces


OK_CALLS = [("all_reduce", (2,)), ("broadcast", (3,)), ("all_gather", (4, 2))]
# Faults combined, one case each, whatever the draws: (rank, position) -> the call made there, "gone" for a
# log that ends before it.
COMBINED_FAULTS = (
    {(1, 1): ("all_gather", (3,)), (2, 1): ("broadcast", (5,))},  # op on one rank, shape on another: op
    {(1, 1): ("all_gather", (5,))},  # op and shape on one rank at one position: op
    {(1, 0): ("all_reduce", (7,)), (2, 1): "gone"},  # a shape mismatch, then a missing call: the shape's
    {(1, 1): ("barrier", ()), (2, 2): "gone"},  # an op mismatch, then a missing call: the op's
    {(1, 1): "gone", (2, 1): ("all_gather", (3,))},  # missing and op at one position: missing
    {(0, 2): ("all_gather", (4, 3)), (2, 2): ("all_gather", (4, 3))},  # shape on two ranks that agree
)


def combined_case(faults: dict) -> list:
    """Three ranks' logs of ``OK_CALLS`` with ``faults`` applied."""
    traces = [list(OK_CALLS) for _ in range(3)]
    for (rank, position), call in faults.items():
        if call == "gone":
            del traces[rank][position:]
        else:
            traces[rank][position] = call
    return traces


@probe("test_first_mismatch",
       clauses={"the first position where the ranks disagree, and why": "call_trace(draw, world)",
                "\"missing\" first, then \"op\", then \"shape\"": "combined_case(faults)",
                "None when every rank made the same calls": '[("barrier", ())]] * 2',
                "any number of ranks, one or more": "(1, 2, 3, 4, 5)",
                "ranks that made no call at all": "[[], [], []]",
                "the logs left unchanged": "contracts"})
def first_mismatch(ns: Namespace, draw: Draw) -> list:
    """first_mismatch on drawn per-rank call traces of 1 to 5 ranks: every kind of fault, at every step, combined, and none"""
    traces = [call_trace(draw, world) for world in (1, 2, 3, 4, 5) for _ in range(12)]
    traces += [[[("all_reduce", (2,))], [("all_reduce", (2,))], []], [[], [], []], [[("barrier", ())]] * 2,
               [[("all_reduce", (2,)), ("broadcast", (3,))], [("broadcast", (3,)), ("all_reduce", (2,))]],
               # a rank missing where the others also disagree: "missing" comes first
               [[("all_reduce", (2,)), ("broadcast", (3,))], [("all_reduce", (2,)), ("all_gather", (3,))],
                [("all_reduce", (2,))]],
               [[("all_reduce", (2,)), ("broadcast", (3,))], [("all_reduce", (2,))],
                [("all_reduce", (2,)), ("broadcast", (4,))]]]
    traces += [combined_case(faults) for faults in COMBINED_FAULTS]
    return [outcome(ns["first_mismatch"], [list(trace) for trace in t]) for t in traces]
