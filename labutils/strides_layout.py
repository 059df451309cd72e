"""The facts a stride diagram shows, as data: where each element of a tensor lives in its storage.

Element ``t[i0, i1, ...]`` lives at storage index ``offset + i0*stride[0] + i1*stride[1] + ...``
(in units of ``t``'s element size). Everything here is computed from ``shape``, ``stride`` and
``storage_offset`` alone, never by reading the data, so the unit tests can check it against
what torch itself does (``as_strided``, ``untyped_storage``, ``data_ptr``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def storage_indices_from(shape: tuple[int, ...], stride: tuple[int, ...], offset: int = 0) -> torch.Tensor:
    """Storage index of every logical element, as an int64 tensor of ``shape``.

    ``result[i0, i1, ...] == offset + sum(ik * stride[k])``: the arithmetic torch does on
    every element access, written out.
    """
    if len(shape) != len(stride):
        raise ValueError(f"shape {tuple(shape)} and stride {tuple(stride)} must have the same length")
    index = torch.full(tuple(shape), int(offset), dtype=torch.int64)
    for dim, (size, step) in enumerate(zip(shape, stride)):
        view_shape = [1] * len(shape)
        view_shape[dim] = size
        index = index + (torch.arange(size, dtype=torch.int64) * int(step)).reshape(view_shape)
    return index


def storage_indices(t: torch.Tensor) -> torch.Tensor:
    """Storage index (in elements of ``t.dtype``) of every element of ``t``; same shape as ``t``."""
    return storage_indices_from(tuple(t.shape), tuple(t.stride()), t.storage_offset())


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
    indices: torch.Tensor

    @property
    def numel(self) -> int:
        """Number of logical elements."""
        return int(self.indices.numel())

    @property
    def storage_numel(self) -> int:
        """How many elements of this dtype fit in the storage."""
        return self.storage_nbytes // self.itemsize

    @property
    def distinct_cells(self) -> int:
        """How many different storage cells the tensor reads."""
        return int(self.indices.unique().numel()) if self.numel else 0

    @property
    def overlapping(self) -> bool:
        """True when two logical elements read the same storage cell (stride 0, as_strided)."""
        return self.distinct_cells < self.numel

    @property
    def span(self) -> tuple[int, int] | None:
        """Lowest and highest storage index read, or None for an empty tensor."""
        if not self.numel:
            return None
        return int(self.indices.min()), int(self.indices.max())

    @property
    def zero_stride_dims(self) -> tuple[int, ...]:
        """Dimensions of size > 1 with stride 0 (what ``expand`` makes)."""
        return tuple(d for d, (n, s) in enumerate(zip(self.shape, self.stride)) if s == 0 and n > 1)

    def same_storage(self, other: Layout) -> bool:
        """True when both tensors view the same storage (same allocation)."""
        return self.storage_ptr == other.storage_ptr


def layout(t: torch.Tensor) -> Layout:
    """Collect the layout facts of ``t`` (shape, stride, offset, storage, contiguity, indices)."""
    storage = t.untyped_storage()
    return Layout(
        shape=tuple(t.shape),
        stride=tuple(t.stride()),
        offset=t.storage_offset(),
        dtype=t.dtype,
        itemsize=t.element_size(),
        storage_ptr=storage.data_ptr(),
        storage_nbytes=storage.nbytes(),
        data_ptr=t.data_ptr(),
        is_contiguous=t.is_contiguous(),
        is_channels_last=t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last),
        indices=storage_indices(t),
    )


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _formula(lay: Layout) -> str:
    letters = "ijklmnpqrs"
    names = [letters[d] if d < len(letters) else f"i{d}" for d in range(len(lay.shape))]
    terms = [f"{s}*{n}" for n, s in zip(names, lay.stride)]
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
    else:
        width = span[1] - span[0] + 1
        lines.append(
            f"reads {lay.distinct_cells} distinct storage cells in the span [{span[0]}, {span[1]}] "
            f"({width} cells); {'overlapping: some cells are read by several elements' if lay.overlapping else 'no cell is read twice'}"
        )
        if lay.distinct_cells < width:
            lines.append(f"gaps: {width - lay.distinct_cells} cells inside the span are skipped")
    return "\n".join(lines)


def explain(t: torch.Tensor, name: str = "t") -> str:
    """Shape, stride, offset, storage, contiguity and overlap of ``t`` in words.

    >>> print(explain(torch.arange(6.).reshape(2, 3).t()))  # doctest: +SKIP
    """
    return explain_layout(layout(t), name)
