"""torchviz, imported safely: torchviz 0.0.3 does ``from distutils.version import LooseVersion``.

Python 3.12 removed ``distutils``; unless setuptools' shim provides it, importing torchviz fails.
We only need its attribute formatter (``get_fn_name``) and fall back to an equivalent here.
"""

from __future__ import annotations

import functools
import warnings
from types import ModuleType

import torch

SAVED_PREFIX = "_saved_"


@functools.cache
def torchviz_dot() -> ModuleType | None:
    """``torchviz.dot``, or None when it cannot be imported (no distutils on Python 3.12+)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # distutils' own deprecation notice
            import torchviz.dot as tv
    except ImportError:
        return None
    return tv


def format_fn_attrs(fn: object, max_chars: int = 40) -> list[str]:
    """Lines ``name: value`` for the saved non-tensor attributes of a backward node."""
    tv = torchviz_dot()
    if tv is not None:
        text = tv.get_fn_name(fn, True, max_chars)
        return text.split("\n")[2:]  # drop the node name and the ---- separator
    return _local_attr_lines(fn, max_chars)


def _local_attr_lines(fn: object, max_chars: int) -> list[str]:
    """The same table torchviz's ``get_fn_name`` draws (keys left-aligned, values right-aligned)."""
    attrs = {}
    for attr in dir(fn):
        if not attr.startswith(SAVED_PREFIX):
            continue
        value = getattr(fn, attr)
        if torch.is_tensor(value):
            attrs[attr.removeprefix(SAVED_PREFIX)] = "[saved tensor]"
        elif isinstance(value, tuple) and any(torch.is_tensor(t) for t in value):
            attrs[attr.removeprefix(SAVED_PREFIX)] = "[saved tensors]"
        else:
            attrs[attr.removeprefix(SAVED_PREFIX)] = str(value)
    if not attrs:
        return []
    max_chars = max(max_chars, 3)
    key_width = max(len(k) for k in attrs)
    value_width = min(max(len(v) for v in attrs.values()), max_chars)

    def fit(text: str) -> str:
        return text[: value_width - 3] + "..." if len(text) > value_width else text

    return [f"{k:<{key_width}}: {fit(v):>{value_width}}" for k, v in attrs.items()]
