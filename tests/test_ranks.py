"""labutils.ranks: bytes per rank by category, and the bar picture of them."""

import pytest
import torch
from torch import nn

from labutils import ranks


def test_state_bytes_counts_parameters_gradients_and_optimizer_state() -> None:
    model = nn.Linear(3, 2)  # 8 fp32 parameters
    optimizer = torch.optim.Adam(model.parameters())
    assert ranks.state_bytes(model, optimizer) == {"parameters": 32, "gradients": 0, "optimizer": 0}
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    held = ranks.state_bytes(model, optimizer)
    assert held["gradients"] == 32
    assert held["optimizer"] == 2 * 32 + 2 * 4  # exp_avg, exp_avg_sq per parameter, plus a 0-d step each
    assert ranks.state_bytes(model)["optimizer"] == 0


def test_bars_one_per_setup_and_rank_in_category_order() -> None:
    per_setup = {
        "DDP": [{"optimizer": 2048, "parameters": 1024, "gradients": 1024}] * 2,
        "FSDP": [{"parameters": 512, "gradients": 512, "optimizer": 1024}] * 2,
    }
    got = ranks.bars(per_setup)
    assert [b.label for b in got] == ["DDP\nrank 0", "DDP\nrank 1", "FSDP\nrank 0", "FSDP\nrank 1"]
    assert [name for name, _ in got[0].segments] == list(ranks.CATEGORIES)
    assert got[0].total == 4.0 and got[2].total == 2.0
    with pytest.raises(ValueError, match="unit"):
        ranks.bars(per_setup, unit="kB")


def test_plot_draws_a_stacked_bar_per_rank() -> None:
    fig = ranks.plot({"single": [{"parameters": 4096, "gradients": 4096, "optimizer": 0}]}, unit="KiB")
    ax = fig.axes[0]
    assert len(ax.patches) == 3  # one segment per category
    assert [t.get_text() for t in ax.get_xticklabels()] == ["single"]
    assert ax.get_ylabel() == "KiB held"
