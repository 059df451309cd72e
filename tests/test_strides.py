"""labutils.strides: the drawn mapping must be what torch itself does with shape, stride and offset."""

from __future__ import annotations

import gc
import math
import random

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure

from labutils import strides
from labutils.strides.layout import layout
from labutils.strides.plan import MAX_DIM, MAX_STORAGE, STORAGE_KEEP, elide, skipped_before, storage_slots

N_RANDOM = 200


def random_case(rng: random.Random) -> tuple[tuple[int, ...], tuple[int, ...], int, int]:
    """A random (shape, stride, offset, storage size) that as_strided accepts; strides include 0."""
    ndim = rng.randint(0, 4)
    shape = tuple(
        rng.choice([0, 1, 1, 2, 3, 4, 5]) if rng.random() < 0.1 else rng.randint(1, 5) for _ in range(ndim)
    )
    stride = tuple(0 if rng.random() < 0.2 else rng.randint(1, 7) for _ in range(ndim))
    offset = rng.randint(0, 5)
    reach = offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True) if n > 0)
    return shape, stride, offset, reach + 1 + rng.randint(0, 3)


def random_cases() -> list[tuple[tuple[int, ...], tuple[int, ...], int, int]]:
    rng = random.Random(1234)
    return [random_case(rng) for _ in range(N_RANDOM)]


def flat_storage(t: torch.Tensor) -> torch.Tensor:
    """A 1-d tensor over the whole untyped storage of ``t``, in t's dtype (independent of labutils)."""
    n = t.untyped_storage().nbytes() // t.element_size()
    return torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (n,), (1,))


def real_views() -> dict[str, torch.Tensor]:
    """Views made by the ops the chapter teaches (not by as_strided), over a few bases."""
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
    y = torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(1))
    s = torch.randn(20, generator=torch.Generator().manual_seed(2))
    return {
        "transpose": x.t(),
        "slice_step": x[1:, ::2],
        "row": x[2],
        "column": x[:, 3],
        "narrow": x.narrow(1, 2, 3),
        "diagonal": x.diagonal(),
        "diagonal_offset": x.diagonal(1),
        "expand": x[:, :1].expand(4, 6),
        "unsqueeze_expand": s[:5].unsqueeze(0).expand(3, 5),
        "permute": y.permute(3, 1, 0, 2),
        "unfold": s.unfold(0, 5, 2),
        "view": y.view(6, 20),
        "channels_last": y.contiguous(memory_format=torch.channels_last),
        "scalar": s[7],
        "select_3d": y[1, :, 2:],
        "movedim": y.movedim(1, -1),
        "as_strided_overlap": s.as_strided((5, 4), (2, 1), 3),
    }


@pytest.mark.parametrize("case", range(N_RANDOM))
def test_storage_indices_equal_as_strided(case: int) -> None:
    shape, stride, offset, size = random_cases()[case]
    base = torch.arange(size, dtype=torch.int64)
    view = base.as_strided(shape, stride, offset)  # each element's value IS its storage index
    torch.testing.assert_close(strides.storage_indices(view), view, rtol=0, atol=0)
    torch.testing.assert_close(strides.storage_indices_from(shape, stride, offset), view, rtol=0, atol=0)


@pytest.mark.parametrize("case", range(0, N_RANDOM, 4))
def test_drawn_mapping_equals_torch(case: int) -> None:
    shape, stride, offset, size = random_cases()[case]
    view = torch.arange(size, dtype=torch.int64).as_strided(shape, stride, offset)
    diagram = strides.show(view, "v")
    drawn = diagram.mapping("v")
    assert len(drawn) == view.numel(), "every element of a small tensor is drawn"
    for index, storage_index in drawn.items():
        assert storage_index == int(view[index]), (
            f"v{list(index)} drawn at {storage_index}, torch says {int(view[index])}"
        )


@pytest.mark.parametrize("case", range(0, N_RANDOM, 4))
def test_read_counts_equal_enumeration(case: int) -> None:
    shape, stride, offset, size = random_cases()[case]
    view = torch.arange(size, dtype=torch.int64).as_strided(shape, stride, offset)
    lay = layout(view)
    values = view.reshape(-1).tolist()
    for cell in range(size):
        assert lay.reads(cell) == values.count(cell), f"cell {cell}: read {values.count(cell)} times"
    assert lay.distinct_cells == len(set(values))
    assert lay.overlapping == (len(set(values)) < len(values))


@pytest.mark.parametrize("name", sorted(real_views()))
def test_indices_match_storage_and_data_ptr(name: str) -> None:
    t = real_views()[name]
    index = strides.storage_indices(t)
    torch.testing.assert_close(flat_storage(t)[index], t, rtol=0, atol=0)
    base_ptr = t.untyped_storage().data_ptr()
    assert t.data_ptr() == base_ptr + t.storage_offset() * t.element_size()
    for flat in range(0, t.numel(), max(1, t.numel() // 7)):
        element = t[tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), t.shape))] if t.dim() else t
        position = int(index.reshape(-1)[flat])
        assert element.data_ptr() == base_ptr + position * t.element_size()


@pytest.mark.parametrize("name", sorted(real_views()))
def test_drawn_cells_of_real_views(name: str) -> None:
    t = real_views()[name]
    diagram = strides.show(t, name)
    index = strides.storage_indices(t)
    assert diagram.cells, "something is drawn"
    for cell in diagram.cells:
        assert cell.storage_index == int(index[cell.index])
        assert flat_storage(t)[cell.storage_index] == t[cell.index]


@pytest.mark.parametrize("shape", [(), (7,), (3, 5), (2, 3, 4), (2, 2, 3, 4), (2, 1, 2, 2, 3)])
def test_every_element_drawn_for_small_tensors_0d_to_5d(shape: tuple[int, ...]) -> None:
    t = torch.arange(math.prod(shape), dtype=torch.int64).reshape(shape)
    drawn = strides.show(t).mapping()
    assert (
        sorted(drawn)
        == sorted(
            tuple(int(i) for i in idx)
            for idx in torch.cartesian_prod(*[torch.arange(n) for n in shape])
            .reshape(-1, len(shape))
            .tolist()
        )
        if shape
        else list(drawn) == [()]
    )
    assert all(v == int(t[k]) for k, v in drawn.items())


@pytest.mark.parametrize("shape", [(100, 100), (10_000,), (40, 50, 60), (12, 13, 14, 15), (3, 4, 5, 6, 7, 8)])
def test_large_tensors_are_elided(shape: tuple[int, ...]) -> None:
    t = torch.zeros(shape)
    diagram = strides.show(t)
    assert len(diagram.cells) <= 16 * (MAX_DIM) ** 2 // 4 * 4, "bounded number of drawn cells"
    assert len(diagram.plan.boxes) < 1200, f"never a {t.numel()}-cell picture"
    assert any(text.s in "⋯⋮⋱" for text in diagram.plan.texts), "an elision marker is drawn"


def test_huge_expand_is_cheap_and_exact() -> None:
    t = torch.zeros(3).expand(100_000, 100_000, 3)  # 3e10 logical elements over 3 cells
    lay = layout(t)
    assert lay.distinct_cells == 3 and lay.overlapping and lay.reads(1) == 10**10
    assert "stride 0 along dim 0, 1" in strides.explain(t)
    assert len(strides.show(t).plan.boxes) < 200


def test_storage_slots_account_for_every_cell() -> None:
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(1, 5000)
        needed = [rng.randrange(n) for _ in range(rng.randint(0, 80))]
        slots = storage_slots(n, needed)
        cells = [s for s in slots if s is not None]
        assert cells == sorted(set(cells)) and all(0 <= c < n for c in cells)
        assert len(slots) <= max(MAX_STORAGE, 2 * STORAGE_KEEP + 1)
        skipped = sum(skipped_before(slots, k, n) for k, s in enumerate(slots) if s is None)
        assert len(cells) + skipped == n, "drawn cells + elided cells = the whole storage"


def test_elide() -> None:
    assert elide(5, 8, 3, 2) == [0, 1, 2, 3, 4]
    assert elide(20, 8, 3, 2) == [0, 1, 2, None, 18, 19]


def test_contiguous_strides_match_torch() -> None:
    rng = random.Random(3)
    for _ in range(50):
        shape = tuple(rng.randint(0, 4) for _ in range(rng.randint(0, 4)))
        assert strides.contiguous_strides(shape) == torch.empty(shape).stride(), shape


def test_explain_states_the_facts() -> None:
    x = torch.arange(12.0).reshape(3, 4)
    text = strides.explain(x.t(), "xt")
    assert "shape (4, 3)" in text and "stride (1, 4)" in text and "storage offset 0" in text
    assert "contiguous: no" in text and "stride (3, 1)" in text
    assert "contiguous: yes" in strides.explain(x)
    assert "storage offset 5" in strides.explain(x.reshape(-1)[5:])
    assert "stride 0 along dim 1" in strides.explain(x[:, :1].expand(3, 4))
    assert "overlapping" in strides.explain(torch.arange(10.0).as_strided((4, 3), (2, 1)))
    assert "channels_last: yes" in strides.explain(
        torch.zeros(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    )
    assert "gaps: 5 cells" in strides.explain(x[:, ::2])
    assert "empty" in strides.explain(torch.zeros(0, 3))


def test_compare_shares_views_and_separates_copies() -> None:
    x = torch.arange(12.0).reshape(3, 4)
    views = [x.t(), x[:, 1], x.t().reshape(12), x.t().contiguous(), x.reshape(2, 6)]
    names = ["x", "x.t()", "x[:, 1]", "reshape copy", "contiguous copy", "reshape view"]
    diagram = strides.compare(x, *views, names=names)
    assert len(diagram.plan.storage_slots) == 3, "one shared storage + one per copy"
    for name, t in zip(names, [x, *views], strict=True):
        drawn = diagram.mapping(name)
        assert drawn and all(v == int(strides.storage_indices(t)[k]) for k, v in drawn.items())
    assert "[reshape copy: its own storage" in diagram.text
    assert "[reshape view: shares x's storage" in diagram.text
    shared = [b for b in diagram.plan.boxes if b.w < 1.0]  # cells read by several tensors are striped
    assert shared, "cells read by several tensors are drawn striped"


def test_compare_mixed_dtypes_uses_bytes() -> None:
    x = torch.arange(6, dtype=torch.float32)
    diagram = strides.compare(x, x.view(torch.uint8)[4:8], names=["x", "bytes of x[1]"])
    assert len(diagram.plan.storage_slots) == 1
    assert len([s for s in diagram.plan.storage_slots[0] if s is not None]) == 24


def test_compare_rejects_wrong_names() -> None:
    with pytest.raises(ValueError, match="names"):
        strides.compare(torch.zeros(2), torch.zeros(2), names=["only one"])


def test_renders_png_svg_and_figure(tmp_path) -> None:
    diagram = strides.show(torch.arange(6.0).reshape(2, 3).t())
    assert diagram._repr_png_().startswith(b"\x89PNG\r\n\x1a\n")
    svg = diagram.savefig(tmp_path / "d.svg")
    assert "<svg" in svg.read_text()
    assert isinstance(diagram.to_figure(), Figure)
    assert "stride (1, 3)" in repr(diagram)


def test_no_figures_leak() -> None:
    before_pyplot = set(plt.get_fignums())
    gc.collect()
    before = sum(type(o) is Figure for o in gc.get_objects())
    diagrams = [strides.show(torch.zeros(2, 2)[:, k:]) for k in range(2)]
    for diagram in diagrams:
        diagram._repr_png_()
    strides.compare(torch.zeros(2), torch.zeros(2)[1:])._repr_png_()
    gc.collect()
    assert set(plt.get_fignums()) == before_pyplot, "diagrams never open pyplot figures"
    assert sum(type(o) is Figure for o in gc.get_objects()) <= before, "rendered figures are freed"
