"""Storage and stride diagrams of real tensors: which storage cells each element reads.

>>> from labutils import strides
>>> x = torch.arange(12.).reshape(3, 4)
>>> strides.show(x.t())                          # storage strip + logical grid + the mapping
>>> strides.compare(x, x.t(), x[:, 1], x.t().reshape(12), names=["x", "x.t()", "x[:, 1]", "reshape"])
>>> print(strides.explain(x.t()))                # the same facts in words

``show`` and ``compare`` return a :class:`StrideDiagram`: it displays inline in Jupyter
(``_repr_png_``), saves with ``.savefig(path)``, gives a matplotlib figure with ``.to_figure()``,
and exposes what it drew as data (``.cells``: the storage index shown for each logical element).
Figures are built without pyplot and dropped after rendering, so long notebooks do not
accumulate open figures.

Inside, facts -> plan -> picture (each module imports only those before it):
:mod:`~labutils.strides.layout` (the facts: shape, stride, offset, storage, which cell each element
reads; ``explain``) -> :mod:`~labutils.strides.plan` (boxes, texts, lines as data; elision) ->
:mod:`~labutils.strides.diagrams` (the plans of ``show`` and ``compare``) ->
:mod:`~labutils.strides.picture` (matplotlib, :class:`StrideDiagram`).
"""

from labutils.strides.layout import (
    Layout,
    contiguous_strides,
    explain,
    layout,
    storage_indices,
    storage_indices_from,
)
from labutils.strides.picture import StrideDiagram, compare, show
from labutils.strides.plan import DrawnCell

__all__ = [
    "DrawnCell",
    "Layout",
    "StrideDiagram",
    "compare",
    "contiguous_strides",
    "explain",
    "layout",
    "show",
    "storage_indices",
    "storage_indices_from",
]
