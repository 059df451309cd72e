"""Recorded notebook durations (a committed file) and sharding by them, longest first."""

from __future__ import annotations

import json
from pathlib import Path

TIMINGS_FILE = Path(__file__).with_name("timings.json")
DEFAULT_SECONDS = 30.0

Timings = dict[str, dict[str, float]]


def mode_key(device: str, smoke: bool) -> str:
    """The key a duration is recorded under, e.g. ``cpu-smoke`` or ``cuda-full``."""
    return f"{device}-{'smoke' if smoke else 'full'}"


def load(path: Path = TIMINGS_FILE) -> Timings:
    """The recorded timings, or empty when the file does not exist yet."""
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def record(timings: Timings, key: str, durations: dict[str, float], path: Path = TIMINGS_FILE) -> None:
    """Merge ``durations`` into the mode ``key`` and write the file (sorted, for clean diffs)."""
    timings.setdefault(key, {}).update({nb: round(s, 2) for nb, s in durations.items()})
    ordered = {k: dict(sorted(v.items())) for k, v in sorted(timings.items())}
    path.write_text(json.dumps(ordered, indent=2) + "\n", encoding="utf-8")


def shard(notebooks: list[str], durations: dict[str, float], index: int, count: int) -> list[str]:
    """Shard ``index`` of ``count``: longest first, each into the least-loaded shard (LPT)."""
    loads = [0.0] * count
    bins: list[list[str]] = [[] for _ in range(count)]
    for nb in sorted(notebooks, key=lambda n: (-durations.get(n, DEFAULT_SECONDS), n)):
        target = loads.index(min(loads))
        bins[target].append(nb)
        loads[target] += durations.get(nb, DEFAULT_SECONDS)
    return bins[index - 1]
