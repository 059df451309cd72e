"""The only way out of a sandbox: plain numbers, short strings and dense CPU tensors, on a wire format
that cannot express anything else.

A message is an 8-byte little-endian length, a JSON document, then the tensors' bytes. In the JSON,
every object is a tag with exactly one key::

    {"$tuple": [...]}   {"$dict": [[key, value], ...]}   {"$tensor": [dtype, shape, offset, nbytes]}

There are no references, so a message of n bytes holds at most n values, and :func:`decode` walks
it once under a :class:`Budget` (bytes, values, depth, string length, seconds). The values are counted
from the bytes before anything is parsed (:func:`values_in`), so a document of millions of tiny values
(``[[],[],...]``) costs the grader a scan, not the gigabytes of objects that parsing it would build.
The sandbox side (:func:`encode`) is honest code, but nothing trusts that: whatever arrives is decoded by
the grader as if it were hostile, and anything outside the format is a :class:`WireError`.
"""

from __future__ import annotations

import json
import math
import struct
import time
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

import torch

# What the wire carries: None, bool, int, float, str, torch.Tensor, and lists, tuples and str-keyed dicts of them.
Plain: TypeAlias = (
    None | bool | int | float | str | torch.Tensor | list["Plain"] | tuple["Plain", ...] | dict[str, "Plain"]
)

# The tensor dtypes that may leave a sandbox (a probe turns any other into a marker), by wire name.
PLAIN_DTYPES: tuple[torch.dtype, ...] = (
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
    torch.complex128,
)
DTYPES: dict[str, torch.dtype] = {str(d).removeprefix("torch."): d for d in PLAIN_DTYPES}
MAX_STRING = 1000  # characters of one string; a probe cuts longer ones here, the grader refuses them
MAX_INT_DIGITS = 40
MAX_DIMS = 16


class WireError(ValueError):
    """The bytes are not a message of this format, or break its budget."""


@dataclass(frozen=True)
class Budget:
    """How much one message may hold, and how long decoding it may take."""

    max_bytes: int = 64 << 20
    max_values: int = 1_000_000  # as :func:`values_in` counts them, before parsing
    max_depth: int = 32
    max_string: int = MAX_STRING
    seconds: float = 20.0


def encode(value: Plain) -> bytes:
    """``value`` as a message (raises WireError for anything that is not plain)."""
    blobs: list[bytes] = []
    offset = [0]

    def tag(v: Plain, depth: int) -> Any:
        if depth > Budget.max_depth:
            raise WireError("nested too deep")
        if v is None or type(v) in (bool, int, float, str):
            return v
        if type(v) is list:
            return [tag(x, depth + 1) for x in v]
        if type(v) is tuple:
            return {"$tuple": [tag(x, depth + 1) for x in v]}
        if type(v) is dict:
            return {"$dict": [[str(k), tag(x, depth + 1)] for k, x in v.items()]}
        if type(v) is torch.Tensor and v.layout == torch.strided and not v.is_nested:
            return {"$tensor": _tensor_bytes(v, blobs, offset)}
        raise WireError(f"not plain: {type(v).__name__}")

    document = json.dumps(tag(value, 0)).encode()
    return struct.pack("<Q", len(document)) + document + b"".join(blobs)


def _tensor_bytes(t: torch.Tensor, blobs: list[bytes], offset: list[int]) -> list:
    name = str(t.dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise WireError(f"dtype {name} cannot leave the sandbox")
    flat = torch.empty(t.numel(), dtype=t.dtype).copy_(
        t.detach().cpu().reshape(-1)
    )  # stride 1, even for one element
    raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    blobs.append(raw)
    offset[0] += len(raw)
    return [name, list(t.shape), offset[0] - len(raw), len(raw)]


def decode(data: bytes, budget: Budget = Budget()) -> Plain:
    """The value in ``data``; WireError when it is not a well-formed message within ``budget``."""
    if len(data) > budget.max_bytes:
        raise WireError(f"{len(data)} bytes: over the {budget.max_bytes} byte limit")
    if len(data) < 8:
        raise WireError("truncated message")
    size = struct.unpack("<Q", data[:8])[0]
    if size > len(data) - 8:
        raise WireError("truncated message")
    if values_in(data, 8, 8 + size) > budget.max_values:
        raise WireError("over the size budget (values)")
    try:
        text = str(
            memoryview(data)[8 : 8 + size], "ascii"
        )  # encode writes ASCII: one byte per character here
        document = json.loads(text, parse_int=_bounded_int, object_pairs_hook=_single_key)
    except RecursionError as err:
        raise WireError("nested too deep") from err
    except WireError:
        raise
    except (ValueError, UnicodeDecodeError) as err:
        raise WireError(f"not a message: {type(err).__name__}") from err
    return _Walk(memoryview(data)[8 + size :], budget).value(document, 0)


def values_in(data: bytes, start: int = 0, end: int | None = None) -> int:
    """A bound on the JSON values in ``data[start:end]``, counted without parsing (and without copying).

    Every value but the first follows a ``[``, ``,`` or ``:``, and every object key a ``{`` or ``,``, so
    one more than the number of these four bytes bounds the lists, objects, keys and scalars that
    parsing would build (inside strings they count too: the bound only grows).
    """
    end = len(data) if end is None else end
    return 1 + sum(data.count(mark, start, end) for mark in (b"[", b"{", b",", b":"))


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise WireError("integer too long")
    return int(text)


def _single_key(pairs: list[tuple[str, Any]]) -> dict:
    if len(pairs) != 1:
        raise WireError("an object must be one tag")
    return dict(pairs)


class _Walk:
    """One pass over a parsed document, counting values against the budget."""

    def __init__(self, blob: memoryview, budget: Budget) -> None:
        self.blob, self.budget = blob, budget
        self.values, self.deadline = 0, time.monotonic() + budget.seconds

    def value(self, node: Any, depth: int) -> Plain:
        self.values += 1
        if self.values > self.budget.max_values or depth > self.budget.max_depth:
            raise WireError("over the size budget (values or depth)")
        if self.values % 4096 == 0 and time.monotonic() > self.deadline:
            raise WireError("took too long to read")
        if node is None or type(node) in (bool, int, float):
            return node
        if type(node) is str:
            if len(node) > self.budget.max_string:
                raise WireError("string too long")
            return node
        if type(node) is list:
            return [self.value(x, depth + 1) for x in node]
        ((key, inner),) = node.items()
        if key == "$tuple" and type(inner) is list:
            return tuple(self.value(x, depth + 1) for x in inner)
        if key == "$dict" and type(inner) is list:
            return self.mapping(inner, depth)
        if key == "$tensor" and type(inner) is list:
            return self.tensor(inner)
        raise WireError(f"unknown tag {key[:20]!r}")

    def mapping(self, items: list, depth: int) -> dict[str, Plain]:
        out: dict[str, Plain] = {}
        for item in items:
            if type(item) is not list or len(item) != 2 or type(item[0]) is not str:
                raise WireError("a dict entry must be [str, value]")
            out[cast(str, self.value(item[0], depth + 1))] = self.value(item[1], depth + 1)
        return out

    def tensor(self, spec: list) -> torch.Tensor:
        if (
            len(spec) != 4
            or type(spec[0]) is not str
            or spec[0] not in DTYPES
            or type(spec[1]) is not list
            or len(spec[1]) > MAX_DIMS
        ):
            raise WireError("bad tensor descriptor")
        dtype, shape, offset, nbytes = DTYPES[spec[0]], spec[1], spec[2], spec[3]
        if (
            not all(type(s) is int and s >= 0 for s in shape)
            or type(offset) is not int
            or type(nbytes) is not int
        ):
            raise WireError("bad tensor descriptor")
        itemsize = torch.empty((), dtype=dtype).element_size()
        if nbytes != math.prod(shape) * itemsize or offset < 0 or offset + nbytes > len(self.blob):
            raise WireError("tensor bytes do not match its shape")
        if nbytes == 0:  # beside a 0, any sizes make 0 bytes: torch refuses those whose strides overflow
            try:
                return torch.empty(shape, dtype=dtype)
            except (RuntimeError, OverflowError) as err:
                raise WireError("bad tensor descriptor") from err
        raw = bytearray(self.blob[offset : offset + nbytes])
        return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(shape).clone()
