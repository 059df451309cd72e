"""Tolerances per comparison (graders.grader.compare): float64 work is held to float64, tails relatively."""

from __future__ import annotations

import torch

from tests.records import compare_wire


def test_float64_results_accumulated_in_float32_differ() -> None:
    x = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    want = x.sum()
    assert not compare_wire({"value": x.float().sum().double()}, {"value": want}).ok
    assert compare_wire(
        {"value": x.sort().values.sum()}, {"value": want}
    ).ok  # another order, float64 rounding


def test_a_flushed_tail_differs_only_where_the_probe_compares_relatively() -> None:
    x = -torch.linspace(300, 700, 5, dtype=torch.float64)
    stable, flushed = torch.log1p(torch.exp(x)), torch.log(1 + torch.exp(x))
    assert bool((flushed == 0).all()) and bool((stable > 0).all())
    assert compare_wire({"value": flushed}, {"value": stable}).ok  # an absolute tolerance cannot see it
    assert not compare_wire({"value": flushed}, {"value": stable}, atol=0.0).ok


def test_subnormals_are_below_any_relative_comparison() -> None:
    tiny = torch.finfo(torch.float32).tiny
    assert compare_wire({"value": torch.tensor([tiny / 64])}, {"value": torch.tensor([0.0])}, atol=0.0).ok
    assert not compare_wire(
        {"value": torch.tensor([tiny * 4])}, {"value": torch.tensor([tiny * 8])}, atol=0.0
    ).ok
