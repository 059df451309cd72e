"""Option values as users type them, parsed once for every command: shards, sizes, devices."""

from __future__ import annotations

import re

Shard = tuple[int, int]
RUN_JOBS = 2  # notebooks `labs run` executes at once
NOTEBOOK_TIMEOUT = 600.0  # seconds a notebook may run before `labs run` kills its kernel

SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.I)
SIZE_UNITS = {"": 2**20, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_shard(spec: str) -> Shard:
    """``"i/n"`` with 1 <= i <= n, else ValueError with a one-line reason."""
    try:
        index, count = (int(part) for part in spec.split("/"))
    except ValueError:
        raise ValueError(f"shard must look like i/n (e.g. 1/4), got {spec!r}") from None
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"shard {spec!r} is out of range: need 1 <= i <= n")
    return index, count


def parse_size(text: str) -> int | None:
    """Bytes of a size as users type it (``2G``, ``512M``, ``1.5GiB``, ``4096`` = MiB); None if it is not one."""
    found = SIZE.match(text)
    return int(float(found[1]) * SIZE_UNITS[found[2].lower()]) if found else None


# labutils.notebook.DEVICE_CHOICES, which cannot be imported without torch (tests/test_startup.py keeps them equal).
DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str) -> str:
    """``--device`` (auto, cpu, cuda) as the device notebooks get; ValueError/RuntimeError say why not.

    An unknown name and ``cpu`` are answered without importing torch (it takes seconds); the rest is
    :func:`labutils.notebook.resolve_device`, the rule notebooks follow too.
    """
    choice = device.lower()
    if choice not in DEVICES:
        raise ValueError(f"unknown device {device!r}")
    if choice == "cpu":
        return "cpu"
    from labutils.notebook import resolve_device as notebook_device

    return notebook_device(device)
