"""Sharding by recorded duration: every notebook in exactly one shard, loads balanced."""

from __future__ import annotations

import random

import pytest

from labs.options import parse_shard
from labs.run.timings import shard


def test_shards_partition_and_balance():
    rng = random.Random(0)
    durations = {f"nb{i}.ipynb": rng.uniform(1, 60) for i in range(40)}
    shards = [shard(list(durations), durations, i, 4) for i in range(1, 5)]
    flat = [nb for s in shards for nb in s]
    assert sorted(flat) == sorted(durations)
    loads = [sum(durations[nb] for nb in s) for s in shards]
    assert max(loads) - min(loads) <= max(durations.values())


def test_longest_first_and_unknown_durations_still_assigned():
    durations = {"a": 100.0, "b": 1.0, "c": 1.0}
    assert shard(["a", "b", "c", "new"], durations, 1, 2) == ["a"]
    assert sorted(shard(["a", "b", "c", "new"], durations, 2, 2)) == ["b", "c", "new"]


@pytest.mark.parametrize("spec", ["0/2", "3/2", "1/0", "x", "1/2/3"])
def test_bad_shard_specs(spec: str):
    with pytest.raises(ValueError):
        parse_shard(spec)


def test_good_shard_spec():
    assert parse_shard("2/3") == (2, 3)
