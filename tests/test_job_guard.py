"""graders.inside.job: what a notebook changes in the grader's modules is put back before the probes run, and
the probes report it (behind the vetting, which refuses such a cell: here the cells run unread)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

SCRIPT = """
import json
from graders.boundary.protocol import Cell
from graders.inside import rules
from graders.inside.job import execute_cells, run_probes

real = rules.forbidden
PROBES = '''
from graders.inside.probing import probe
from graders.inside.rules import forbidden

@probe("test_x")
def x(ns, draw):
    return forbidden is not None
'''
cells, ns = execute_cells([Cell("c", {cell!r}, graded=True)])
found = run_probes(PROBES, "probes.py", ns, salt=1)
print(json.dumps({{"cells": cells, "found": found, "restored": rules.forbidden is real}}))
"""


def _run(cell: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(cell=cell)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_notebook_that_rebinds_a_recorder_gets_no_observation() -> None:
    seen = _run("import graders.inside.rules as r\nr.forbidden = None\n")
    assert seen["cells"] == {"c": {"ok": True, "error": ""}}
    assert seen["restored"]
    [error] = [record["error"] for record in seen["found"].values()]
    assert error.startswith("the notebook changed the grader's modules (graders.inside.rules.forbidden")


def test_a_notebook_that_replaces_the_module_gets_no_observation() -> None:
    seen = _run("import sys, types\nsys.modules['graders.inside.rules'] = types.ModuleType('fake')\n")
    assert seen["restored"] and "graders.inside.rules" in seen["found"]["test_x"]["error"]


def test_an_honest_notebook_is_probed() -> None:
    assert _run("y = 1\n")["found"]["test_x"]["value"] is True
