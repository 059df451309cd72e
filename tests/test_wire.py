"""graders.boundary.wire: the decoder of what comes out of a sandbox, tested as the hostile-input parser it is.

Every malformed message of the table is a :class:`graders.boundary.wire.WireError`; the fuzz tests (Hypothesis,
derandomised) hand it random bytes, honest messages cut or with a byte changed, and documents built
from any JSON, and check that nothing else escapes it and that what it returns is within its budget.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graders.boundary import wire
from graders.inside.probing import to_plain

FUZZ = settings(
    max_examples=200,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
SMALL = wire.Budget(max_bytes=1 << 16, max_values=500, max_depth=8, max_string=40, seconds=20.0)


def message(document: Any, blob: bytes = b"", raw: bytes | None = None) -> bytes:
    """A message of ``document`` (JSON, or the ``raw`` bytes as they are) and a tensor ``blob``."""
    text = raw if raw is not None else json.dumps(document).encode()
    return struct.pack("<Q", len(text)) + text + blob


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def tensor_message(descriptor: list, blob: bytes = b"\0" * 8) -> bytes:
    return message({"$tensor": descriptor}, blob)


MALFORMED = {
    "empty": b"",
    "shorter than the length": b"\x05\0\0\0\0\0\0",
    "length past the end": struct.pack("<Q", 10) + b"[1]",
    "length of 2**64 - 1": b"\xff" * 8 + b"[]",
    "not JSON": message(None, raw=b"[1,"),
    "JSON with trailing bytes in the document": message(None, raw=b"[1] x"),
    "non-ASCII document": message(None, raw='"caf\u00e9"'.encode()),
    "nested past the budget": message(nested(wire.Budget.max_depth + 2)),
    "nested past the parser's recursion": message(None, raw=b"[" * 200_000 + b"]" * 200_000),
    "tuples nested past the budget": message(json.loads('{"$tuple": [' * 40 + "0" + "]}" * 40)),
    "object of two keys": message(None, raw=b'{"$tuple": [], "$dict": []}'),
    "object of one key twice": message(None, raw=b'{"$tuple": [], "$tuple": []}'),
    "empty object": message({}),
    "unknown tag": message({"$set": [1, 2]}),
    "tag of a non-list": message({"$tuple": 5}),
    "dict entry not a pair": message({"$dict": [["a", 1, 2]]}),
    "dict entry not a list": message({"$dict": ["a"]}),
    "dict key not a string": message({"$dict": [[1, 2]]}),
    "dict key too long": message({"$dict": [["k" * (wire.MAX_STRING + 1), 1]]}),
    "integer of too many digits": message(None, raw=b"1" + b"0" * wire.MAX_INT_DIGITS),
    "negative integer of too many digits": message(None, raw=b"-" + b"9" * wire.MAX_INT_DIGITS),
    "string too long": message("x" * (wire.MAX_STRING + 1)),
    "tensor: three fields": tensor_message(["float32", [2], 0]),
    "tensor: unknown dtype": tensor_message(["float8", [2], 0, 2]),
    "tensor: dtype a list": tensor_message([["float32"], [2], 0, 8]),
    "tensor: dtype an object": tensor_message([{"$tuple": []}, [2], 0, 8]),
    "tensor: shape not a list": tensor_message(["float32", 2, 0, 8]),
    "tensor: negative size": tensor_message(["float32", [-2], 0, 8]),
    "tensor: size a bool": tensor_message(["bool", [True], 0, 1]),
    "tensor: size a float": tensor_message(["float32", [2.0], 0, 8]),
    "tensor: too many dimensions": tensor_message(["uint8", [1] * (wire.MAX_DIMS + 1), 0, 1]),
    "tensor: offset a float": tensor_message(["float32", [2], 0.0, 8]),
    "tensor: negative offset": tensor_message(["uint8", [2], -1, 2]),
    "tensor: bytes not its shape's": tensor_message(["float32", [2], 0, 4]),
    "tensor: bytes past the blob": tensor_message(["float32", [2], 4, 8]),
    "tensor: empty, strides past int64": tensor_message(["float32", [0, 2**62, 2**62], 0, 0]),
}


@pytest.mark.parametrize("data", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_message_is_a_wire_error(data: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.decode(data)


BUDGETS = {
    "bytes": (wire.Budget(max_bytes=64), message(list(range(40)))),
    "values, counted before parsing": (wire.Budget(max_values=10), message(list(range(20)))),
    "depth": (wire.Budget(max_depth=3), message(nested(5))),
    "string length": (wire.Budget(max_string=3), message(["abcd"])),
    "seconds": (wire.Budget(seconds=-1.0), message([[]] * 5000)),
}


@pytest.mark.parametrize(("budget", "data"), BUDGETS.values(), ids=BUDGETS.keys())
def test_a_message_over_its_budget_is_a_wire_error(budget: wire.Budget, data: bytes) -> None:
    wire.decode(data)  # within the default budget
    with pytest.raises(wire.WireError):
        wire.decode(data, budget)


def test_the_limits_are_the_wires_own() -> None:
    """The probes cut strings and mark dtypes by these very limits (graders.inside.probing)."""
    assert wire.Budget().max_string == wire.MAX_STRING
    assert set(wire.DTYPES.values()) == set(wire.PLAIN_DTYPES)
    assert all(wire.DTYPES[str(d).removeprefix("torch.")] is d for d in wire.PLAIN_DTYPES)


def test_odd_strides_round_trip():
    base = torch.arange(72.0).reshape(3, 24)
    odd = [base[:1, 0], base[:, :1][:1], base.t()[1:], base[:0], torch.tensor(5.0), base[::2, ::5]]
    back = wire.decode(wire.encode(to_plain(odd)))
    for got, want in zip(back, odd, strict=True):
        assert torch.equal(got, want) and got.is_contiguous()


# --- fuzzing ---------------------------------------------------------------------------------------


def within(value: Any, budget: wire.Budget, depth: int = 0) -> int:
    """How many values ``value`` holds; fails when one is nested, long or of a type past ``budget``."""
    assert depth <= budget.max_depth
    if value is None or type(value) in (bool, int, float):
        return 1
    if type(value) is str:
        assert len(value) <= budget.max_string
        return 1
    if type(value) is torch.Tensor:
        assert value.dtype in wire.PLAIN_DTYPES and value.is_contiguous()
        return 1
    if type(value) in (list, tuple):
        return 1 + sum(within(v, budget, depth + 1) for v in value)
    assert type(value) is dict and all(type(k) is str and len(k) <= budget.max_string for k in value)
    return 1 + len(value) + sum(within(v, budget, depth + 1) for v in value.values())


def decoded_within_budget(data: bytes, budget: wire.Budget = SMALL) -> None:
    """Decoding ``data`` raises WireError or gives a value within ``budget``: nothing else."""
    try:
        value = wire.decode(data, budget)
    except wire.WireError:
        return
    assert within(value, budget) <= budget.max_values


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.dictionaries(st.sampled_from(["$tuple", "$dict", "$tensor", "a"]), inner, max_size=2)
    ),
    max_leaves=40,
)
plain_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=5).map(tuple)
        | st.dictionaries(st.text(max_size=40), inner, max_size=4)
    ),
    max_leaves=30,
)
descriptors = st.lists(
    st.none()
    | st.integers(-3, 20)
    | st.sampled_from(sorted(wire.DTYPES))
    | st.text(max_size=8)
    | st.lists(st.integers(-2, 2**63), max_size=4),
    min_size=3,
    max_size=5,
)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_never_crash_the_decoder(data: bytes) -> None:
    decoded_within_budget(data)
    decoded_within_budget(struct.pack("<Q", max(0, len(data) - 3)) + data)


@FUZZ
@given(json_values, st.binary(max_size=64))
def test_any_json_document_decodes_within_budget_or_is_refused(document: Any, blob: bytes) -> None:
    decoded_within_budget(message(document, blob))


@FUZZ
@given(descriptors, st.binary(max_size=64))
def test_any_tensor_descriptor_decodes_or_is_refused(descriptor: list, blob: bytes) -> None:
    decoded_within_budget(tensor_message(descriptor, blob))


@FUZZ
@given(plain_values, st.data())
def test_an_honest_message_round_trips_and_any_damage_is_refused(value: Any, data: st.DataObject) -> None:
    tensors = [torch.arange(6, dtype=torch.float32).reshape(2, 3), torch.tensor([True, False])]
    sent = wire.encode([value, *tensors])
    back = wire.decode(sent)
    assert back[0] == value and all(torch.equal(a, b) for a, b in zip(back[1:], tensors, strict=True))
    cut = data.draw(st.integers(0, len(sent) - 1), label="cut")
    decoded_within_budget(sent[:cut])
    where = data.draw(st.integers(0, len(sent) - 1), label="where")
    byte = data.draw(st.integers(0, 255), label="byte")
    decoded_within_budget(sent[:where] + bytes([byte]) + sent[where + 1 :])
