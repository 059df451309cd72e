"""Bytes per rank, by category: what each rank of a data-parallel job holds.

Built like the other visualizers: data (:func:`state_bytes`, measured on a rank) -> transform
(:func:`bars`, one stacked bar per setup and rank) -> renderer (:func:`draw`), behind one short face,
:func:`plot`::

    # on every rank (e.g. inside labutils.launch.launch)
    held = ranks.state_bytes(model, optimizer)      # {"parameters": ..., "gradients": ..., "optimizer": ...}
    # in the notebook, with what each rank returned
    ranks.plot({"DDP": ddp_per_rank, "FSDP": fsdp_per_rank})

A sharded parameter (a ``DTensor``, as ``fully_shard`` makes them) counts only the shard the rank
stores, so DDP and FSDP are measured the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from matplotlib.figure import Figure

CATEGORIES = ("parameters", "gradients", "optimizer")
COLORS = {"parameters": "tab:blue", "gradients": "tab:orange", "optimizer": "tab:green"}
UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def local_bytes(t: torch.Tensor) -> int:
    """Bytes this rank stores for ``t``: its local shard for a ``DTensor``, the whole tensor otherwise."""
    from torch.distributed.tensor import DTensor

    local = t.to_local() if isinstance(t, DTensor) else t
    return local.numel() * local.element_size()


def state_bytes(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None) -> dict[str, int]:
    """Bytes of parameters, gradients and optimizer state (tensors only) this rank holds for ``model``."""
    params = list(model.parameters())
    state = (
        []
        if optimizer is None
        else [v for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    )
    return {
        "parameters": sum(local_bytes(p) for p in params),
        "gradients": sum(local_bytes(p.grad) for p in params if p.grad is not None),
        "optimizer": sum(local_bytes(v) for v in state),
    }


@dataclass(frozen=True)
class Bar:
    """One stacked bar: ``label`` (setup and rank) and its segments, in ``unit``."""

    label: str
    segments: tuple[tuple[str, float], ...]
    unit: str

    @property
    def total(self) -> float:
        """Height of the whole bar."""
        return sum(value for _, value in self.segments)


def bars(per_setup: Mapping[str, Sequence[Mapping[str, int]]], unit: str = "KiB") -> list[Bar]:
    """One :class:`Bar` per setup and rank, segments in :data:`CATEGORIES` order (then any others)."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {sorted(UNITS)}, got {unit!r}")
    out = []
    for setup, per_rank in per_setup.items():
        for rank, held in enumerate(per_rank):
            names = [c for c in CATEGORIES if c in held] + [c for c in held if c not in CATEGORIES]
            label = f"{setup}\nrank {rank}" if len(per_rank) > 1 else setup
            out.append(Bar(label, tuple((name, held[name] / UNITS[unit]) for name in names), unit))
    return out


def draw(bar_list: Sequence[Bar], title: str = "") -> Figure:
    """Render stacked bars (one per setup and rank) with the total written above each bar."""
    fig = Figure(figsize=(max(4.0, 1.1 * len(bar_list) + 1.5), 3.2))
    ax = fig.subplots()
    labelled: set[str] = set()
    for x, bar in enumerate(bar_list):
        bottom = 0.0
        for name, value in bar.segments:
            ax.bar(
                x,
                value,
                bottom=bottom,
                color=COLORS.get(name, "tab:gray"),
                label=None if name in labelled else name,
            )
            labelled.add(name)
            bottom += value
        ax.text(x, bottom, f"{bottom:.1f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(bar_list)), [bar.label for bar in bar_list], fontsize=8)
    ax.set_ylabel(f"{bar_list[0].unit} held" if bar_list else "held")
    ax.set_title(title)
    if labelled:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot(
    per_setup: Mapping[str, Sequence[Mapping[str, int]]],
    title: str = "training state per rank",
    unit: str = "KiB",
) -> Figure:
    """Stacked bars of bytes per rank by category, for each setup (``{"DDP": [rank0, rank1], ...}``)."""
    return draw(bars(per_setup, unit), title)
