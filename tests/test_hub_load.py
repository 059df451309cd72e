"""Load on a class: 20 students sign in to one `labs hub` and run a lesson's first cells at once (2 cores).

benchmarks/bench_hub_load.py does the work (a real class, each student an asyncio session over HTTP and kernel
websockets on 127.0.0.1); this asserts that every student's cells finished and every submission was collected,
and writes the figures to build/report/hub_load.json. It takes a few minutes of both cores, so it runs in a stage
of its own, `make hubload` (marker hubload; in `make system`, which .ci/run runs after `make test`).
Skips when not root (a class makes unix users) or without configurable-http-proxy.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from tests.browser.hub import need_a_class
from tests.conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.hub, pytest.mark.hubload]

STUDENTS = 20
REPORT = ROOT / "build" / "report" / "hub_load.json"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("bench_hub_load", ROOT / "benchmarks" / "bench_hub_load.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_twenty_students_at_once():
    need_a_class()
    bench = load_benchmark()
    assert bench.main(["--students", str(STUDENTS), "--json", str(REPORT)]) == 0, REPORT.read_text()
    figures = json.loads(REPORT.read_text())
    assert figures["finished"] == figures["collected"] == STUDENTS, figures["errors"]
    assert all(len(s["cells_s"]) == figures["cells"] for s in figures["per_student"])
