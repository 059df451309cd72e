"""The facts a stride diagram shows, as data: where each element of a tensor lives in its storage.

Element ``t[i0, i1, ...]`` lives at storage index ``offset + i0*stride[0] + i1*stride[1] + ...``
(in units of ``t``'s element size). Everything here is computed from ``shape``, ``stride`` and
``storage_offset`` alone, never by reading the data, so the unit tests can check it against
what torch itself does (``as_strided``, ``untyped_storage``, ``data_ptr``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch

EXACT_LIMIT = 2_000_000  # enumerate at most this many elements to count overlapping reads


def storage_indices_from(shape: tuple[int, ...], stride: tuple[int, ...], offset: int = 0) -> torch.Tensor:
    """Storage index of every logical element, as an int64 tensor of ``shape``.

    ``result[i0, i1, ...] == offset + sum(ik * stride[k])``: the arithmetic torch does on
    every element access, written out.
    """
    if len(shape) != len(stride):
        raise ValueError(f"shape {tuple(shape)} and stride {tuple(stride)} must have the same length")
    index = torch.full(tuple(shape), int(offset), dtype=torch.int64)
    for dim, (size, step) in enumerate(zip(shape, stride, strict=True)):
        view_shape = [1] * len(shape)
        view_shape[dim] = size
        index = index + (torch.arange(size, dtype=torch.int64) * int(step)).reshape(view_shape)
    return index


def storage_indices(t: torch.Tensor) -> torch.Tensor:
    """Storage index (in elements of ``t.dtype``) of every element of ``t``; same shape as ``t``."""
    return storage_indices_from(tuple(t.shape), tuple(t.stride()), int(t.storage_offset()))


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The row-major (C order) strides a freshly allocated tensor of ``shape`` gets."""
    strides: list[int] = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Layout:
    """Shape, stride, offset and storage facts of one tensor (no reference to its data)."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: torch.dtype
    itemsize: int
    storage_ptr: int
    storage_nbytes: int
    data_ptr: int
    is_contiguous: bool
    is_channels_last: bool

    @cached_property
    def indices(self) -> torch.Tensor:
        """Storage index of every logical element (int64, same shape as the tensor); computed once."""
        return storage_indices_from(self.shape, self.stride, self.offset)

    def index_of(self, index: tuple[int, ...]) -> int:
        """Storage index of the element at logical ``index``."""
        return self.offset + sum(i * s for i, s in zip(index, self.stride, strict=True))

    @property
    def numel(self) -> int:
        """Number of logical elements."""
        return math.prod(self.shape)

    @property
    def storage_numel(self) -> int:
        """How many elements of this dtype fit in the storage."""
        return self.storage_nbytes // self.itemsize

    @property
    def repeat(self) -> int:
        """How many times each read cell is read because of stride-0 dims (1 without them)."""
        return math.prod(n for n, s in zip(self.shape, self.stride, strict=True) if s == 0)

    @cached_property
    def _moving_dims(self) -> list[tuple[int, int]]:
        """(size, stride) of the dims that move through storage (size > 1, stride > 0), smallest stride first."""
        return sorted(
            ((n, s) for n, s in zip(self.shape, self.stride, strict=True) if n > 1 and s != 0),
            key=lambda d: d[1],
        )

    @cached_property
    def disjoint(self) -> bool:
        """True when the moving dims never land on the same cell twice (each stride clears the smaller dims)."""
        extent = 0
        for size, step in self._moving_dims:
            if step <= extent:
                return False
            extent += (size - 1) * step
        return True

    @cached_property
    def _exact_counts(self) -> dict[int, int] | None:
        """Read count of every read cell, by enumeration; None when that would be too big."""
        moving = self._moving_dims
        if math.prod(n for n, _ in moving) > EXACT_LIMIT:
            return None
        index = storage_indices_from(tuple(n for n, _ in moving), tuple(s for _, s in moving), self.offset)
        values, counts = index.reshape(-1).unique(return_counts=True)
        return {int(v): int(c) * self.repeat for v, c in zip(values.tolist(), counts.tolist(), strict=True)}

    def reads(self, cell: int) -> int | None:
        """How many logical elements read storage ``cell`` (0: unread); None if too costly to know."""
        if self.numel == 0:
            return 0
        if self.disjoint:
            rest = cell - self.offset
            for size, step in reversed(self._moving_dims):
                quotient = rest // step if rest >= 0 else -1
                if quotient >= size or quotient < 0:
                    return 0
                rest -= quotient * step
            return self.repeat if rest == 0 else 0
        counts = self._exact_counts
        return None if counts is None else counts.get(cell, 0)

    @cached_property
    def distinct_cells(self) -> int | None:
        """How many different storage cells the tensor reads (None: too costly to count exactly)."""
        if self.numel == 0:
            return 0
        if self.disjoint:
            return math.prod(n for n, _ in self._moving_dims)
        counts = self._exact_counts
        return None if counts is None else len(counts)

    @property
    def overlapping(self) -> bool | None:
        """True when two logical elements read the same storage cell (stride 0, as_strided, unfold)."""
        distinct = self.distinct_cells
        return None if distinct is None else distinct < self.numel

    @property
    def span(self) -> tuple[int, int] | None:
        """Lowest and highest storage index read, or None for an empty tensor."""
        if not self.numel:
            return None
        low = self.offset + sum(min(0, (n - 1) * s) for n, s in zip(self.shape, self.stride, strict=True))
        high = self.offset + sum(max(0, (n - 1) * s) for n, s in zip(self.shape, self.stride, strict=True))
        return low, high

    @property
    def zero_stride_dims(self) -> tuple[int, ...]:
        """Dimensions of size > 1 with stride 0 (what ``expand`` makes)."""
        return tuple(
            d for d, (n, s) in enumerate(zip(self.shape, self.stride, strict=True)) if s == 0 and n > 1
        )

    def same_storage(self, other: Layout) -> bool:
        """True when both tensors view the same storage (same allocation)."""
        return self.storage_ptr == other.storage_ptr


def layout(t: torch.Tensor) -> Layout:
    """Collect the layout facts of ``t`` (shape, stride, offset, storage, contiguity, indices)."""
    storage = t.untyped_storage()
    return Layout(
        shape=tuple(t.shape),
        stride=tuple(t.stride()),
        offset=int(t.storage_offset()),
        dtype=t.dtype,
        itemsize=t.element_size(),
        storage_ptr=storage.data_ptr(),
        storage_nbytes=storage.nbytes(),
        data_ptr=t.data_ptr(),
        is_contiguous=t.is_contiguous(),
        is_channels_last=t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last),
    )


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _formula(lay: Layout) -> str:
    letters = "ijklmnpqrs"
    names = [letters[d] if d < len(letters) else f"i{d}" for d in range(len(lay.shape))]
    terms = [f"{s}*{n}" for n, s in zip(names, lay.stride, strict=True)]
    rhs = " + ".join([str(lay.offset), *terms]) if terms else str(lay.offset)
    lhs = f"[{', '.join(names)}]" if names else "[]"
    return f"element t{lhs} lives at storage[{rhs}]"


def explain_layout(lay: Layout, name: str = "t") -> str:
    """The facts of a stride diagram as plain text (see :func:`explain`)."""
    lines = [
        f"{name}: shape {lay.shape}, dtype {_dtype_name(lay.dtype)} ({lay.itemsize} bytes/element), "
        f"{lay.numel} elements",
        f"stride {lay.stride} (elements to skip in storage for +1 along each dim), "
        f"storage offset {lay.offset}",
        f"storage: {lay.storage_numel} elements ({lay.storage_nbytes} bytes) "
        f"at 0x{lay.storage_ptr:x}; data_ptr = storage + {lay.offset}*{lay.itemsize} bytes",
        _formula(lay).replace("element t", f"element {name}"),
    ]
    want = contiguous_strides(lay.shape)
    if lay.is_contiguous:
        lines.append("contiguous: yes (row-major order, no gaps)")
    else:
        lines.append(f"contiguous: no (a row-major tensor of this shape would have stride {want})")
    if lay.is_channels_last:
        lines.append("channels_last: yes (dims N, C, H, W stored in order N, H, W, C)")
    if lay.zero_stride_dims:
        dims = ", ".join(str(d) for d in lay.zero_stride_dims)
        lines.append(f"stride 0 along dim {dims}: every step along it re-reads the same cells (expand)")
    span = lay.span
    if span is None:
        lines.append("empty: reads no storage cell")
        return "\n".join(lines)
    width = span[1] - span[0] + 1
    distinct = lay.distinct_cells
    if distinct is None:
        lines.append(
            f"reads storage cells in the span [{span[0]}, {span[1]}]; overlap not counted "
            f"(more than {EXACT_LIMIT} elements)"
        )
        return "\n".join(lines)
    overlap = (
        "overlapping: some cells are read by several elements" if lay.overlapping else "no cell is read twice"
    )
    lines.append(
        f"reads {distinct} distinct storage cells in the span [{span[0]}, {span[1]}] "
        f"({width} cells); {overlap}"
    )
    if distinct < width:
        lines.append(f"gaps: {width - distinct} cells inside the span are not read")
    return "\n".join(lines)


def explain(t: torch.Tensor, name: str = "t") -> str:
    """Shape, stride, offset, storage, contiguity and overlap of ``t`` in words.

    >>> print(explain(torch.arange(6.).reshape(2, 3).t()))  # doctest: +SKIP
    """
    return explain_layout(layout(t), name)
