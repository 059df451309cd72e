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

from graders.probing import Draw, Namespace, outcome, probe


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


def _snapshot(value: object) -> object:
    """A copy of ``value`` if it is a tensor (later in-place updates must not show), else ``value``."""
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _mlp_case(ns: Namespace, draw: Draw) -> dict:
    """Build one NormalizedMLP on drawn statistics and record its state and behaviour."""
    n_in, n_hidden, n_out = draw.randint(2, 7), draw.randint(3, 12), draw.randint(1, 4)
    dtype = draw.choice([torch.float32, torch.float64, torch.int64])
    mean = (draw.randn(n_in) * 3).to(dtype)
    std = (draw.randn(n_in).abs() * 2 + 1).to(dtype)
    net = ns["NormalizedMLP"](n_in, n_hidden, n_out, mean, std)
    _set_linear(draw, net.hidden)
    _set_linear(draw, net.out)
    obs: dict = {"state": _module_state(net)}
    x = draw.randn(draw.randint(1, 6), n_in) * 2
    calls = draw.randint(1, 4)
    obs["outputs"] = [outcome(net, x) for _ in range(calls)]
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


@probe("test_normalized_mlp")
def normalized_mlp(ns: Namespace, draw: Draw) -> list:
    """NormalizedMLP: parameters, buffers, state_dict, forward, copies of mean/std, .to() and reloading"""
    return [_mlp_case(ns, draw) for _ in range(4)]


def _epoch_case(ns: Namespace, draw: Draw) -> dict:
    """One epoch on a drawn model, data and optimizer, starting in eval mode with stale gradients."""
    n_in, n_classes = draw.randint(3, 8), draw.randint(2, 4)
    batch_size = draw.randint(4, 9)
    n = batch_size * draw.randint(2, 5) + draw.randint(1, batch_size - 1)  # a smaller last batch
    xs, ys = draw.randn(n, n_in), torch.randint(0, n_classes, (n,), generator=draw.gen)
    batches = [(xs[i:i + batch_size], ys[i:i + batch_size]) for i in range(0, n, batch_size)]
    model = _small_mlp(draw, n_in, n_classes, dropout=0.3)
    model.eval()  # the function must switch to training mode itself
    for p in model.parameters():
        p.grad = draw.randn(*p.shape) * 3  # stale gradients left by earlier code
    kind = draw.choice(["sgd", "momentum", "adam"])
    lr = draw.choice([0.01, 0.05, 0.1])
    if kind == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9 if kind == "momentum" else 0.0)
    torch.manual_seed(draw.randint(0, 2**31))  # dropout masks: the same in both runs
    loss = ns["train_one_epoch"](model, batches, F.cross_entropy, opt)
    return {"loss": loss, "training": bool(model.training), "parameters": [p.detach() for p in model.parameters()]}


@probe("test_train_one_epoch", rtol=1e-5, atol=1e-6)
def train_one_epoch(ns: Namespace, draw: Draw) -> list:
    """train_one_epoch: training mode, gradients cleared before each step, per-sample mean loss"""
    return [_epoch_case(ns, draw) for _ in range(4)]


def _lr_case(ns: Namespace, draw: Draw) -> list:
    """Learning rates of each parameter group at every step of a drawn schedule."""
    warmup = draw.randint(0, 6) if draw.randint(0, 3) == 0 else draw.randint(1, 6)
    total = warmup + draw.randint(1, 9)
    min_ratio = draw.choice([0.0, 0.05, 0.1, 0.25, 0.5])
    bases = [draw.random.uniform(0.01, 1.0) for _ in range(draw.randint(1, 3))]
    params = [nn.Parameter(torch.zeros(1)) for _ in bases]
    opt = torch.optim.SGD([{"params": [p], "lr": b} for p, b in zip(params, bases, strict=True)])
    sched = ns["warmup_cosine"](opt, warmup, total, min_ratio)
    seen = []
    for _ in range(total + draw.randint(2, 6)):
        seen.append([float(g["lr"]) for g in opt.param_groups])
        for p in params:
            p.grad = torch.zeros_like(p)
        opt.step()
        sched.step()
    return seen


@probe("test_warmup_cosine")
def warmup_cosine(ns: Namespace, draw: Draw) -> list:
    """warmup_cosine: the learning rate of every group at every step (warmup, cosine, floor)"""
    return [_lr_case(ns, draw) for _ in range(6)]


def _seed_all(seed: int) -> None:
    """Seed torch's, Python's and NumPy's global generators."""
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


def _build(seed: int, sizes: tuple[int, int]) -> tuple:
    """Model with dropout, AdamW and StepLR, initialised from ``seed``."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Dropout(0.25), nn.Linear(sizes[1], 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sched


def _train(model: nn.Module, opt: torch.optim.Optimizer, sched: object, epochs: int, n_in: int) -> None:
    """A few steps per epoch drawing from torch's, Python's and NumPy's global generators."""
    model.train()
    for _ in range(epochs):
        for _ in range(2):
            x = torch.randn(8, n_in) * random.uniform(0.5, 1.5) + torch.from_numpy(np.random.rand(8, n_in)).float()
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        sched.step()


def _load_safely(path: Path) -> None:
    """Load ``path`` with ``weights_only=True`` (raises if the file holds anything else)."""
    torch.load(path, weights_only=True)


def _resume_case(ns: Namespace, draw: Draw, folder: Path) -> dict:
    """Train, save, scramble the RNGs, rebuild, load, keep training: the state reached."""
    sizes = (draw.randint(3, 7), draw.randint(8, 20))
    stop, total = draw.randint(1, 3), draw.randint(4, 5)
    _seed_all(draw.randint(0, 2**31))
    first = _build(draw.randint(0, 1000), sizes)
    _train(*first, stop, sizes[0])
    path = folder / f"ckpt{draw.randint(0, 10**6)}.pt"
    ns["save_checkpoint"](path, *first, epoch=stop)
    _seed_all(draw.randint(0, 2**31))  # a new process: other RNG states, other initial weights
    resumed = _build(draw.randint(1001, 2000), sizes)
    epoch = ns["load_checkpoint"](path, *resumed)
    rngs = [torch.rand(3), random.random(), float(np.random.rand())]
    _seed_all(draw.randint(0, 2**31))
    again = _build(draw.randint(1001, 2000), sizes)
    ns["load_checkpoint"](path, *again)
    _train(*again, total - stop, sizes[0])
    state = again[1].state_dict()["state"]
    return {
        "epoch": epoch,
        "rngs_after_load": rngs,
        "weights_only_load": outcome(_load_safely, path),
        "parameters": [p.detach() for p in again[0].parameters()],
        "last_lr": [float(v) for v in again[2].get_last_lr()],
        "exp_avg": [state[k]["exp_avg"] for k in sorted(state)],
    }


@probe("test_checkpoint")
def checkpoint(ns: Namespace, draw: Draw) -> list:
    """save/load_checkpoint: resuming restores model, optimizer, scheduler, epoch and all RNG states"""
    with tempfile.TemporaryDirectory() as tmp:
        return [_resume_case(ns, draw, Path(tmp)) for _ in range(3)]


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


@probe("test_make_loader")
def make_loader(ns: Namespace, draw: Draw) -> list:
    """make_loader: batch order and augmentation for given seeds, with and without workers"""
    cases = []
    for workers in (0, 0, 2):
        n, batch_size = draw.randint(8, 24), draw.randint(2, 4)
        seed, other = draw.randint(0, 10**6), draw.randint(0, 10**6)
        cases.append([_loader_epoch(ns, draw, s, workers, n, batch_size) for s in (seed, seed, other)])
    return cases


def _accumulate_case(ns: Namespace, draw: Draw) -> dict:
    """Gradients left by accumulate_gradients and the batch sizes the model saw."""
    n_in, n_classes = draw.randint(2, 6), draw.randint(2, 4)
    model = _small_mlp(draw, n_in, n_classes, dropout=0.0)
    micro = draw.choice([1, 2, 3, 4, 6])
    n = micro * draw.randint(1, 6)
    x, y = draw.randn(n, n_in), torch.randint(0, n_classes, (n,), generator=draw.gen)
    for p in model.parameters():
        p.grad = draw.randn(*p.shape) * 5  # stale gradients
    sizes: list = []
    layer_sizes: list = []  # also each layer: model.forward(x) skips the model's own hook, not theirs
    hooks = [model.register_forward_pre_hook(lambda mod, args: sizes.append(len(args[0])))]
    for index, layer in enumerate(model):
        hooks.append(layer.register_forward_pre_hook(
            lambda mod, args, index=index: layer_sizes.append((index, len(args[0])))))
    try:
        result = ns["accumulate_gradients"](model, F.cross_entropy, x, y, micro)
    finally:
        for hook in hooks:
            hook.remove()
    return {"returned": result, "sizes": sizes, "layer_sizes": layer_sizes, "grads": [p.grad for p in model.parameters()]}


@probe("test_accumulate_gradients")
def accumulate_gradients(ns: Namespace, draw: Draw) -> list:
    """accumulate_gradients: the full-batch gradient in .grad, micro-batch sizes (of every layer), stale gradients ignored"""
    return [_accumulate_case(ns, draw) for _ in range(6)]
