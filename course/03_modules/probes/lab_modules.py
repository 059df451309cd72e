"""Probes of lab_modules: each drives one exercise on inputs and models drawn for this grading run.

The probes build models, optimizers and data from the draw (input construction), call the
student's code on them and return what it produced: outputs, parameters, learning rates, batches
and gradients. The reference values come from running the same probe after the source notebook.
"""

import random
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from graders.inside.probing import Draw, Namespace, outcome, probe


def _small_mlp(draw: Draw, n_in: int, n_out: int, dropout: float) -> nn.Sequential:
    """Linear-ReLU-(Dropout)-Linear with drawn sizes, initialised from the draw's generator."""
    hidden = draw.randint(8, 24)
    layers: list[nn.Module] = [nn.Linear(n_in, hidden), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(hidden, n_out))
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(draw.randn(*p.shape) * 0.4)
    return model


def _set_linear(draw: Draw, layer: nn.Module) -> None:
    """Overwrite a Linear's weight and bias with drawn values (independent of how it was built)."""
    with torch.no_grad():
        layer.weight.copy_(draw.randn(*layer.weight.shape) * 0.5)
        layer.bias.copy_(draw.randn(*layer.bias.shape) * 0.5)


def _module_state(net: nn.Module) -> dict:
    """Names, shapes and dtypes of a module's parameters, buffers and state_dict entries."""
    return {
        "parameters": sorted((name, tuple(p.shape)) for name, p in net.named_parameters()),
        "buffers": sorted((name, str(b.dtype), tuple(b.shape)) for name, b in net.named_buffers()),
        "state_dict": sorted(net.state_dict()),
    }


def _plain_float(value: object) -> object:
    """A float the lab asks for, as a Python float: ``numpy.float64`` (what ``np.mean`` or ``np.average``
    give) is a subclass the lab's own ``isinstance(loss, float)`` accepts; anything else as it is."""
    return float(value) if isinstance(value, float) else value


def _snapshot(value: object) -> object:
    """A copy of ``value`` if it is a tensor (later in-place updates must not show), else ``value``."""
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _mlp_case(ns: Namespace, draw: Draw, dtype: torch.dtype) -> dict:
    """Build one NormalizedMLP on drawn statistics of ``dtype`` and record its state and behaviour."""
    n_in, n_hidden, n_out = draw.randint(2, 7), draw.randint(3, 12), draw.randint(1, 4)
    mean = (draw.randn(n_in) * 3).to(dtype)
    std = (draw.randn(n_in).abs() * 2 + 1).to(dtype)
    net = ns["NormalizedMLP"](n_in, n_hidden, n_out, mean, std)
    _set_linear(draw, net.hidden)
    _set_linear(draw, net.out)
    obs: dict = {"state": _module_state(net)}
    x = draw.randn(draw.randint(1, 6), n_in) * 2
    calls = draw.randint(1, 4)
    obs["outputs"] = [outcome(net, x) for _ in range(calls)]
    # the forward must be differentiable: gradients of the parameters through it (a detached or
    # no_grad forward raises here)
    obs["gradients"] = outcome(lambda: torch.autograd.grad(net(x).square().sum(), list(net.parameters())))
    obs["calls"] = _snapshot(net.calls)
    mean.add_(draw.randint(5, 50))  # the caller changes its tensor: the module must hold a copy
    std.mul_(draw.randint(2, 5))
    obs["after_caller_write"] = outcome(net, x)
    obs["mean"], obs["std"] = _snapshot(net.mean), _snapshot(net.std)
    obs["requires_grad"] = [bool(net.mean.requires_grad), bool(net.std.requires_grad)]
    moved = net.to(torch.float64)
    obs["moved"] = [str(moved.mean.dtype), str(moved.std.dtype), outcome(moved, x.double())]
    net.to(torch.float32)
    other = ns["NormalizedMLP"](n_in, n_hidden, n_out, torch.zeros(n_in), torch.ones(n_in))
    obs["load"] = outcome(lambda: [list(keys) for keys in other.load_state_dict(net.state_dict())])
    x2 = draw.randn(draw.randint(1, 5), n_in)
    obs["loaded_output"] = outcome(other, x2)
    obs["loaded_calls"] = other.calls
    return obs


@probe("test_normalized_mlp",
       clauses={"parameters hidden and out, nothing else; buffers mean, std, calls": "_mlp_case(ns, draw, dtype)",
                "mean and std: float32 copies of statistics of any dtype": "torch.int64",
                "forward(x) = out(relu(hidden((x - mean) / std))), differentiable": "_mlp_case(ns, draw, dtype)",
                "mean and std saved in state_dict, moved by .to(), calls not saved": "_mlp_case(ns, draw, dtype)",
                "calls grows by one per forward call, in eval mode and under no_grad too": "net.eval()",
                "one input feature, a batch of one row": "ns[\"NormalizedMLP\"](1,",
                "the caller's statistics left unchanged": "contracts"})
def normalized_mlp(ns: Namespace, draw: Draw) -> list:
    """NormalizedMLP: parameters, buffers, state_dict, forward, copies of mean/std, .to() and reloading"""
    # Statistics given as float32, float64 and int64, each every run: the buffers are float32 copies.
    dtypes = [torch.float32, torch.float64, torch.int64, draw.choice([torch.float32, torch.float64, torch.int64])]
    cases = [_mlp_case(ns, draw, dtype) for dtype in dtypes]
    # "per call": every forward counts, whatever the mode and whether autograd records
    net = ns["NormalizedMLP"](1, draw.randint(2, 5), draw.randint(1, 3), draw.randn(1), draw.randn(1).abs() + 1)
    _set_linear(draw, net.hidden)
    _set_linear(draw, net.out)
    x = draw.randn(1, 1)
    outputs = [outcome(net, x)]
    net.eval()
    outputs.append(outcome(net, x))
    with torch.no_grad():
        outputs.append(outcome(net, x))
    net.train()
    outputs.append(outcome(net, x))
    cases.append({"outputs": outputs, "calls": _snapshot(net.calls), "state": _module_state(net)})
    return cases


def _epoch_case(ns: Namespace, draw: Draw, clip: str, groups: int, last: str = "smaller") -> dict:
    """One epoch on a drawn model, data and optimizer (of ``groups`` parameter groups, 0: drawn),
    starting in eval mode with stale gradients; ``last``: the last batch "smaller" than the others, as
    "full" as they are, or the "only" batch (smaller than batch_size)."""
    n_in, n_classes = draw.randint(3, 8), draw.randint(2, 4)
    batch_size = draw.randint(4, 9)
    n = batch_size * draw.randint(2, 5) + draw.randint(1, batch_size - 1)  # a smaller last batch
    if last != "smaller":
        n = batch_size * draw.randint(2, 5) if last == "full" else draw.randint(1, batch_size - 1)
    xs, ys = draw.randn(n, n_in), torch.randint(0, n_classes, (n,), generator=draw.gen)
    batches = [(xs[i:i + batch_size], ys[i:i + batch_size]) for i in range(0, n, batch_size)]
    model = _small_mlp(draw, n_in, n_classes, dropout=0.3)
    model.eval()  # the function must switch to training mode itself
    for p in model.parameters():
        p.grad = draw.randn(*p.shape) * 3  # stale gradients left by earlier code
    kind = draw.choice(["sgd", "momentum", "adam"])
    lr = draw.choice([0.01, 0.05, 0.1])
    params = list(model.parameters())
    if (groups or draw.randint(1, 2)) == 2:  # two groups, the second with its own lr: clipping is over both
        cut = draw.randint(1, len(params) - 1)
        params = [{"params": params[:cut]}, {"params": params[cut:], "lr": lr * draw.choice([0.5, 2.0])}]
    if kind == "adam":
        opt = torch.optim.Adam(params, lr=lr)
    else:
        opt = torch.optim.SGD(params, lr=lr, momentum=0.9 if kind == "momentum" else 0.0)
    # max_norm: none, tiny (every step clipped), huge (no step clipped: the branch left alone) or 0.0
    # (falsy, not None: every gradient scaled to 0)
    max_norm = {"none": None, "small": draw.choice([0.05, 0.1, 0.3]), "large": 1e6, "zero": 0.0}[clip]
    torch.manual_seed(draw.randint(0, 2**31))  # dropout masks: the same in both runs
    if max_norm is None and draw.randint(0, 1):
        loss = ns["train_one_epoch"](model, batches, F.cross_entropy, opt)
    else:
        loss = ns["train_one_epoch"](model, batches, F.cross_entropy, opt, max_norm)
    return {"loss": _plain_float(loss), "training": bool(model.training),
            "parameters": [p.detach() for p in model.parameters()]}


@probe("test_train_one_epoch", rtol=1e-5, atol=1e-6,
       clauses={"training mode whatever mode the model came in": "_epoch_case(ns, draw, clip, groups)",
                "gradients cleared before each step (stale .grad never leaks)": "_epoch_case(ns, draw, clip, groups)",
                "max_norm None (passed or by default): no clipping": '("none", 1)',
                "total 2-norm over all parameters clipped to max_norm, two parameter groups": '("small", 2)',
                "steps already small enough left alone": '("large", 0)',
                "max_norm 0.0 is not None": '("zero", 2)',
                "the per-sample mean loss, a Python float, a smaller last batch": "_epoch_case(ns, draw, clip, groups)",
                "equal batches, and a loader of one batch": '"only"',
                "no other side effect (global modes, RNG)": "contracts"})
def train_one_epoch(ns: Namespace, draw: Draw) -> list:
    """train_one_epoch: training mode, gradients cleared before each step, total-norm clipping (none, clipped, unclipped, max_norm 0) over one or two parameter groups, per-sample mean loss"""
    cases = (("none", 1), ("small", 2), ("large", 0), ("none", 0), ("small", 1), ("zero", 2))
    return [_epoch_case(ns, draw, clip, groups) for clip, groups in cases] + \
        [_epoch_case(ns, draw, "none", 1, last="full"), _epoch_case(ns, draw, "small", 2, last="only")]


def _lr_case(ns: Namespace, draw: Draw, boundary: str = "") -> list:
    """Learning rates of each parameter group at every step of a drawn schedule.

    ``boundary``: "no_warmup" (warmup_steps = 0, allowed), "floor" (min_ratio > 0, several groups),
    "default" (min_ratio not passed: its default, 0).
    """
    warmup = draw.randint(0, 6) if draw.randint(0, 3) == 0 else draw.randint(1, 6)
    if boundary == "no_warmup":
        warmup = 0
    total = warmup + draw.randint(1, 9)
    if boundary in ("one_cosine_step", "one_warmup_step"):  # the shortest cosine; the shortest warmup
        warmup = draw.randint(1, 6) if boundary == "one_cosine_step" else 1
        total = warmup + 1 if boundary == "one_cosine_step" else warmup + draw.randint(1, 9)
    min_ratio = draw.choice([0.05, 0.1, 0.25, 0.5] if boundary == "floor" else [0.0, 0.05, 0.1, 0.25, 0.5])
    bases = [draw.random.uniform(0.01, 1.0) for _ in range(draw.randint(2, 3) if boundary == "floor" else draw.randint(1, 3))]
    params = [nn.Parameter(torch.zeros(1)) for _ in bases]
    opt = torch.optim.SGD([{"params": [p], "lr": b} for p, b in zip(params, bases, strict=True)])
    if boundary == "default":
        sched = ns["warmup_cosine"](opt, warmup, total)
    else:
        sched = ns["warmup_cosine"](opt, warmup, total, min_ratio)
    seen = []
    for _ in range(total + draw.randint(2, 6)):
        seen.append([float(g["lr"]) for g in opt.param_groups])
        for p in params:
            p.grad = torch.zeros_like(p)
        opt.step()
        sched.step()
    return seen


@probe("test_warmup_cosine",
       clauses={"returns a LambdaLR; the lr of the t-th optimizer.step()": "_lr_case(ns, draw, boundary)",
                "(t + 1) / warmup_steps while t < warmup_steps, one warmup step included": '"one_warmup_step"',
                "the cosine from warmup_steps to total_steps, one cosine step included": '"one_cosine_step"',
                "min_ratio for t >= total_steps": '"floor"',
                "warmup_steps may be 0": '"no_warmup"',
                "min_ratio defaults to 0": '"default"',
                "every parameter group keeps its own base_lr": '"floor"'})
def warmup_cosine(ns: Namespace, draw: Draw) -> list:
    """warmup_cosine: the learning rate of every group at every step (warmup, cosine, floor, min_ratio by default)"""
    return [_lr_case(ns, draw, boundary)
            for boundary in ("no_warmup", "floor", "default", "", "", "", "one_cosine_step", "one_warmup_step")]


def _seed_all(seed: int) -> None:
    """Seed torch's, Python's and NumPy's global generators."""
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


class _EpochCappedLoader(torch.utils.data.DataLoader):
    """A DataLoader that raises when one call starts more epochs than ``total_steps`` can need: a run
    that never ends fails on a wrong value (this error) rather than on the time limit."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - DataLoader's own arguments
        super().__init__(*args, **kwargs)
        self.epochs_left = None

    def __iter__(self):  # noqa: ANN204 - DataLoader's iterator
        if self.epochs_left is not None:
            if self.epochs_left <= 0:
                raise RuntimeError("more epochs than total_steps needs")
            self.epochs_left -= 1
        return super().__iter__()


def _train_capped(train: object, run: tuple, total: int, *args: object, **kwargs: object) -> None:
    """``train(*run, total, *args, **kwargs)`` with the loader allowed the epochs ``total`` steps need, and one more."""
    loader = run[3]
    loader.epochs_left = -(-total // len(loader)) + 1
    try:
        train(*run, total, *args, **kwargs)
    finally:
        loader.epochs_left = None


def _resumable_run(draw: Draw, data: tuple, batch_size: int, init_seed: int, loader_seed: int,
                   training: bool = True) -> tuple:
    """Model with dropout (in training mode or not), AdamW, a per-step StepLR and a shuffling loader
    with its own generator."""
    n_in, hidden = data[0].shape[1], data[2]
    torch.manual_seed(init_seed)
    model = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Dropout(0.25), nn.Linear(hidden, 3))
    model.train(training)  # the function puts it in training mode itself
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=draw.randint(2, 4), gamma=0.7)
    dataset = torch.utils.data.TensorDataset(data[0], data[1])
    loader = _EpochCappedLoader(dataset, batch_size=batch_size, shuffle=True,
                                generator=torch.Generator().manual_seed(loader_seed))
    return model, opt, sched, loader


def _load_safely(path: Path) -> None:
    """Load ``path`` with ``weights_only=True`` (raises if the file holds anything else)."""
    torch.load(path, weights_only=True)


def _final_state(run: tuple) -> dict:
    """Weights, AdamW's first moments and the learning rate a run ended with."""
    state = run[1].state_dict()["state"]
    return {"parameters": [p.detach().clone() for p in run[0].parameters()],
            "exp_avg": [state[k]["exp_avg"].clone() for k in sorted(state)],
            "last_lr": [float(v) for v in run[2].get_last_lr()]}


def _resume_case(ns: Namespace, draw: Draw, folder: Path, where: str) -> dict:
    """Uninterrupted vs stopped at ``where`` (mid-epoch, epoch end, first step, last epoch, after the last
    step) and resumed; each run's model comes in training or eval mode ("eval": all three in eval)."""
    batch_size = draw.randint(4, 8)
    n = batch_size * draw.randint(3, 5) + draw.randint(1, batch_size - 1)  # a smaller last batch
    per_epoch = -(-n // batch_size)
    total = per_epoch * draw.randint(2, 3) + draw.randint(1, per_epoch - 1)
    stop = {"mid": per_epoch * draw.randint(0, 1) + draw.randint(2, per_epoch - 1),
            "epoch_end": per_epoch * draw.randint(1, 2), "first": 1,
            "last_epoch": total - draw.randint(1, 2), "end": total, "eval": per_epoch + draw.randint(1, per_epoch - 1),
            "twice": per_epoch + draw.randint(1, per_epoch - 2)}[where]
    if where == "twice":
        stop2 = stop + draw.randint(1, per_epoch - (stop - per_epoch))  # later in the same epoch, or its end
    modes = [False] * 3 if where == "eval" else [bool(draw.randint(0, 1)) for _ in range(3)]
    data = (draw.randn(n, draw.randint(3, 6)), torch.randint(0, 3, (n,), generator=draw.gen), draw.randint(8, 16))
    init, loader_seed, seed = draw.randint(0, 1000), draw.randint(0, 1000), draw.randint(0, 2**31)
    tag = draw.randint(0, 10**9)
    _seed_all(seed)
    straight = _resumable_run(draw, data, batch_size, init, loader_seed, modes[0])
    _train_capped(ns["train_resumable"], straight, total, folder / f"never{tag}.pt")
    obs: dict = {"straight": _final_state(straight), "stop": stop, "total": total}
    _seed_all(seed)
    first = _resumable_run(draw, data, batch_size, init, loader_seed, modes[1])
    path = folder / f"ckpt{tag}.pt"
    _train_capped(ns["train_resumable"], first, total, path, stop_at=stop)
    obs["at_stop"] = _final_state(first)
    obs["weights_only_load"] = outcome(_load_safely, path)
    _seed_all(draw.randint(0, 2**31))  # a new process: other RNG states, weights and loader seed
    resumed = _resumable_run(draw, data, batch_size, draw.randint(1001, 2000), draw.randint(1001, 2000), modes[2])
    if where == "twice":  # a second stop later in the same epoch, from the resumed run, then a third run
        obs["second_stop"] = outcome(_train_capped, ns["train_resumable"], resumed, total, path, stop_at=stop2)
        obs["at_second_stop"] = _final_state(resumed)
        _seed_all(draw.randint(0, 2**31))
        resumed = _resumable_run(draw, data, batch_size, draw.randint(2001, 3000), draw.randint(2001, 3000), modes[2])
    obs["resume"] = outcome(_train_capped, ns["train_resumable"], resumed, total, path)
    obs["resumed"] = _final_state(resumed)
    return obs


@probe("test_checkpoint",
       clauses={"total_steps optimizer steps over loader, epoch after epoch": "_resume_case(ns, draw, Path(tmp), where)",
                "stop_at saves right after that step and returns; the file loads with weights_only=True":
                    "_resume_case(ns, draw, Path(tmp), where)",
                "stop_at in the middle of an epoch": '"mid"',
                "stop_at at an epoch's end": '"epoch_end"',
                "stop_at after the first step": '"first"',
                "stop_at in the last epoch, and after the last step": '"last_epoch", "end"',
                "resumes from path if it exists, bitwise like one run (weights, optimizer, lr)": '"mid"',
                "training mode whatever mode the model comes in": '"eval"',
                "stop, resume, stop again in the same epoch, resume again": '"twice"'})
def checkpoint(ns: Namespace, draw: Draw) -> list:
    """train_resumable: stopping mid-epoch, at an epoch's end, after step 1, in the last epoch or after the last step, then resuming, ends bitwise like one run; models given in eval mode"""
    with tempfile.TemporaryDirectory() as tmp:
        return [_resume_case(ns, draw, Path(tmp), where)
                for where in ("mid", "epoch_end", "first", "last_epoch", "end", "eval", "twice")]


class _Augmented(torch.utils.data.Dataset):
    """Samples ``[i, one draw of self.rng]``: order and augmentation show in each sample."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.rng = np.random.default_rng(0)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.tensor([float(i), self.rng.random()], dtype=torch.float64)


def _loader_epoch(ns: Namespace, draw: Draw, seed: int, workers: int, n: int, batch_size: int) -> list:
    """One epoch of a fresh loader, after other code consumed a drawn amount of the global RNG."""
    torch.rand(draw.randint(1, 9))
    random.random()
    return list(ns["make_loader"](_Augmented(n), batch_size, seed, workers))


@probe("test_make_loader",
       clauses={"shuffles with its own generator seeded with seed, whatever the global RNG": "_loader_epoch",
                "the same seed gives identical epochs, another seed other epochs": "(seed, seed, other)",
                "num_workers > 0: each worker reseeds its copy of dataset.rng from its whole worker seed":
                    "(0, 1, 2, 0, 0)",
                "num_workers == 0: dataset.rng = np.random.default_rng(seed), a seed past 2**32 included":
                    "2**32 + draw.randint(0, 10**6)",
                "batch_size given; a smaller last batch": "draw.randint(2, 4)"})
def make_loader(ns: Namespace, draw: Draw) -> list:
    """make_loader: batch order and augmentation for given seeds, with and without workers"""
    cases = []
    for case, workers in enumerate((0, 1, 2, 0, 0)):  # one worker: reseeded too (not only when there are several)
        n, batch_size = draw.randint(8, 24), draw.randint(2, 4)
        seed, other = draw.randint(0, 10**6), draw.randint(0, 10**6)
        if case == 4:  # the whole seed, not reduced modulo 2**32
            seed, other = 2**32 + draw.randint(0, 10**6), 2**33 + draw.randint(0, 10**6)
        cases.append([_loader_epoch(ns, draw, s, workers, n, batch_size) for s in (seed, seed, other)])
    return cases


def _accumulate_case(ns: Namespace, draw: Draw, shape: str) -> dict:
    """Gradients and loss left by accumulate_gradients, and the batch sizes the model and its layers saw."""
    n_in, n_classes = draw.randint(2, 6), draw.randint(2, 4)
    model = _small_mlp(draw, n_in, n_classes, dropout=0.0)
    size = draw.randint(4, 6) if shape == "chunky" else draw.randint(2, 6)
    # "chunky": 2 * size + 1 samples are size, size, 1; three equal chunks (x.chunk(3)) would be smaller
    n = {"uneven": size * draw.randint(1, 4) + draw.randint(1, size - 1), "even": size * draw.randint(2, 4),
         "one": draw.randint(1, size), "singles": draw.randint(3, 7), "chunky": 2 * size + 1,
         "exact": size, "lone": 1}[shape]
    if shape == "singles":
        size = 1
    x, y = draw.randn(n, n_in), torch.randint(0, n_classes, (n,), generator=draw.gen)
    unlabelled = torch.rand(n, generator=draw.gen) < 0.35
    if shape in ("uneven", "even") and n >= 2 * size:
        unlabelled[:size] = True  # a whole micro-batch without a label
    unlabelled[draw.randint(0, n - 1)] = False  # at least one labelled sample
    y[unlabelled] = -100
    for p in model.parameters():
        p.grad = draw.randn(*p.shape) * 5  # stale gradients
    sizes: list = []
    layer_sizes: list = []  # also each layer: model.forward(x) skips the model's own hook, not theirs
    hooks = [model.register_forward_pre_hook(lambda mod, args: sizes.append(len(args[0])))]
    for index, layer in enumerate(model):
        hooks.append(layer.register_forward_pre_hook(
            lambda mod, args, index=index: layer_sizes.append((index, len(args[0])))))
    try:
        result = outcome(ns["accumulate_gradients"], model, x, y, size)
    finally:
        for hook in hooks:
            hook.remove()
    return {"returned": _plain_float(result), "sizes": sizes, "layer_sizes": layer_sizes,
            "grads": [p.grad for p in model.parameters()]}


@probe("test_accumulate_gradients", rtol=1e-5, atol=1e-6,
       clauses={"the whole batch's labelled-mean gradient in every .grad, its loss as a Python float":
                    "_accumulate_case(ns, draw, shape)",
                "micro-batches of exactly micro_batch_size in order, only the last smaller": '"uneven"',
                "equal micro-batches": '"even"',
                "micro-batches the size of chunks, not x.chunk": '"chunky"',
                "micro_batch_size 1": '"singles"',
                "one micro-batch (the batch no bigger than micro_batch_size), a batch of one sample": '"lone"',
                "a micro-batch exactly the whole batch": '"exact"',
                "a micro-batch with no labelled sample, no NaN in .grad": '"even"',
                "earlier contents of .grad do not count": "_accumulate_case(ns, draw, shape)"})
def accumulate_gradients(ns: Namespace, draw: Draw) -> list:
    """accumulate_gradients: full-batch gradient and loss with unlabelled samples, uneven/even/single micro-batches, stale gradients ignored"""
    shapes = ("uneven", "uneven", "even", "one", "singles", "uneven", "chunky", "exact", "lone")
    return [_accumulate_case(ns, draw, shape) for shape in shapes]


def _accuracy_and_confusion(result: object) -> object:
    """evaluate's ``(accuracy, confusion)`` as a tuple with a Python float first (a list of the two unpacks
    the same way in the lab's test); anything else as it is."""
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return _plain_float(result[0]), result[1]
    return result


class _Unbatched:
    """An iterable of no batch at all (an empty loader)."""

    def __iter__(self):  # noqa: ANN204 - a plain iterator
        return iter(())


def _evaluate_case(ns: Namespace, draw: Draw, splits: object, start_training: bool, workers: int,
                   last_of_one: bool = False) -> dict:
    """evaluate on a DigitsCNN with drawn weights over a drawn part of a digits split."""
    from labutils import digits

    torch.manual_seed(draw.randint(0, 2**31))
    model = digits.DigitsCNN()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(draw.choice([1.0, 2.0, 3.0]))  # other weights, other confusions
    split = draw.choice([splits.val, splits.test])
    count = draw.randint(40, len(split))
    pick = torch.randperm(len(split), generator=draw.gen)[:count]
    dataset = torch.utils.data.TensorDataset(split.x[pick], split.y[pick])
    batch_size = draw.randint(7, 64)
    if count % batch_size == 0:
        batch_size += 1  # a smaller last batch
    if last_of_one:  # a last batch of one sample
        batch_size = count - 1
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, num_workers=workers)
    model.train(start_training)
    modes: list = []
    hook = model.register_forward_pre_hook(lambda mod, args: modes.append((bool(mod.training), torch.is_grad_enabled())))
    try:
        result = outcome(ns["evaluate"], model, loader)
    finally:
        hook.remove()
    return {"result": _accuracy_and_confusion(result), "forward_modes": sorted(set(modes)),
            "training_after": bool(model.training),
            "grad_enabled_after": torch.is_grad_enabled()}


def _more_classes_case(ns: Namespace, draw: Draw, splits: object) -> dict:
    """evaluate with ``num_classes`` above 10: a head with more logits than the digits have classes (a
    confusion sized 10 x 10 whatever the argument says fails here)."""
    classes = draw.randint(11, 14)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, classes))
    with torch.no_grad():
        model[1].weight.copy_(draw.randn(classes, 64))
        model[1].bias.copy_(draw.randn(classes))
    rows = draw.randint(30, 60)
    dataset = torch.utils.data.TensorDataset(splits.test.x[:rows], splits.test.y[:rows])
    loader = torch.utils.data.DataLoader(dataset, batch_size=draw.randint(7, 16))
    return {"result": _accuracy_and_confusion(outcome(ns["evaluate"], model, loader, num_classes=classes)),
            "classes": classes}


@probe("test_evaluate", rtol=1e-6, atol=1e-9,
       clauses={"accuracy over all samples, a Python float; a smaller last batch": "_evaluate_case(ns",
                "a last batch of one sample": "last_of_one=True",
                "confusion[t, p], int64 (num_classes, num_classes)": "_evaluate_case(ns",
                "num_classes other than 10": "_more_classes_case",
                "every forward in eval mode and without autograd": "_evaluate_case(ns",
                "the model left in the mode it came in (training or eval)": "(False, 0)",
                "a loader with worker processes": "(True, 2)",
                "an empty loader: 0.0 and an all-zero matrix": "_Unbatched()",
                "grad mode and the rest left as found": "contracts"})
def evaluate(ns: Namespace, draw: Draw) -> list:
    """evaluate on DigitsCNN and the digits data: accuracy, confusion [truth, prediction], eval + no autograd, mode restored, workers 0 and 2, empty loader, more classes"""
    from labutils import digits

    splits = digits.load(seed=draw.randint(0, 3))
    cases = [_evaluate_case(ns, draw, splits, training, workers)
             for training, workers in ((True, 0), (False, 0), (True, 2), (False, 0))]
    model = digits.DigitsCNN()
    cases.append({"empty": _accuracy_and_confusion(outcome(ns["evaluate"], model, _Unbatched())), "classes": 10})
    cases.append(_more_classes_case(ns, draw, splits))
    cases.append(_evaluate_case(ns, draw, splits, True, 0, last_of_one=True))
    return cases


_BUGGY = {
    "ok": [("", "train", "zero_first", "logits"), ("", "train", "model_zero", "logits"),
           ("", "train", "zero_both", "logits")],
    # "after": cleared after each step only, so the gradients left by earlier code reach the first step
    "no_zero_grad": [("", "train", "never", "logits"), ("", "train", "once", "logits"),
                     ("", "train", "after", "logits")],
    # "none": never switches modes (the model comes in eval mode, so it trains in eval mode);
    # "eval_after_first": eval mode from the second batch on (a mid-epoch evaluation that stays)
    "eval_mode": [("", "eval", "zero_first", "logits"), ("", "eval_then_train", "zero_first", "logits"),
                  ("", "train_false", "model_zero", "logits"), ("", "none", "zero_first", "logits"),
                  ("", "eval_after_first", "model_zero", "logits")],
    "softmax_loss": [("", "train", "zero_first", "softmax"), ("", "train", "model_zero", "module_softmax")],
}


def _training_epoch(spec: tuple) -> object:
    """One way of writing an epoch, with at most one bug, made from ``spec`` (no readable source)."""
    _, mode, zero, loss_kind = spec
    criterion = nn.CrossEntropyLoss()

    def epoch(model, batches, optimizer):  # noqa: ANN001, ANN202 - the student's diagnose calls it
        if mode == "eval" or mode == "eval_then_train":
            model.eval()
        elif mode == "train_false":
            model.train(False)
        elif mode != "none":
            model.train()
        if zero == "once":
            optimizer.zero_grad()
        for x, y in batches:
            if zero in ("zero_first", "zero_both"):
                optimizer.zero_grad()
            elif zero == "model_zero":
                model.zero_grad(set_to_none=False)
            logits = model(x)
            if loss_kind == "softmax":
                loss = F.cross_entropy(logits.softmax(dim=-1), y)
            elif loss_kind == "module_softmax":
                loss = criterion(nn.Softmax(dim=1)(logits), y)
            else:
                loss = criterion(logits, y)
            loss.backward()
            optimizer.step()
            if zero in ("zero_both", "after"):
                optimizer.zero_grad()
            if mode == "eval_after_first":
                model.eval()
        if mode == "eval_then_train":
            model.train()

    epoch.__qualname__ = epoch.__name__ = "train_epoch"
    return epoch


@probe("test_diagnose",
       clauses={"\"ok\" for every way of writing a correct epoch": "_BUGGY.items()",
                "\"no_zero_grad\": never, once, or only after each step": "_BUGGY.items()",
                "\"eval_mode\": from the start, part-way, or never leaving the caller's eval mode": "_BUGGY.items()",
                "\"softmax_loss\": probabilities into cross_entropy": "_BUGGY.items()",
                "decided by running train_epoch (no readable source)": "_training_epoch(spec)",
                "in any order": "draw.random.shuffle(specs)"})
def diagnose(ns: Namespace, draw: Draw) -> list:
    """diagnose: the label of every drawn training epoch (each way of writing no bug, zero_grad missing or after the step only, eval mode from the start, part-way or never leaving it, softmax into cross_entropy)"""
    specs = [(label, spec) for label, options in _BUGGY.items() for spec in options]
    draw.random.shuffle(specs)
    return [outcome(ns["diagnose"], _training_epoch(spec)) for _, spec in specs]
