"""A self-check of one exercise runs and scores only that exercise's test cells and probes, and stops after them."""

from __future__ import annotations

from graders.cells import reference_cells
from graders.grading import focused, job_for, load_lab
from graders.job import run_probes
from tests.conftest import FIXTURES

LAB = FIXTURES / "course" / "fx_basic" / "lab_basic.ipynb"


def test_a_focused_lab_runs_only_its_test_cells_and_probes_and_nothing_after() -> None:
    lab = load_lab(LAB)
    everything = job_for(lab, reference_cells(lab.source), salt=1)
    tests = [t.grade_id for t in lab.tests]
    assert len(tests) >= 2, "the fixture lab needs two graded test cells"
    one = focused(lab, tests[:1])
    job = job_for(one, reference_cells(lab.source), salt=1)
    graded = [c.key for c in job.cells if c.graded]
    assert graded == tests[:1]
    first_test = next(i for i, c in enumerate(everything.cells) if c.key == tests[0])
    assert [c.key for c in job.cells] == [c.key for c in everything.cells[:first_test + 1]]  # nothing after it
    assert job.probes_only == tests[:1] and everything.probes_only == []
    assert [t.grade_id for t in one.tests] == tests[:1] and set(one.probes) == {tests[0]}


def test_run_probes_runs_only_the_probes_it_is_asked_for() -> None:
    source = ("from graders.probing import probe\n"
              "@probe('a')\ndef a(ns, draw):\n    '''a'''\n    return 1\n"
              "@probe('b')\ndef b(ns, draw):\n    '''b'''\n    raise AssertionError('must not run')\n")
    assert run_probes(source, "p.py", {}, 0, only=["a"]) == {"a": {"value": 1}}
    assert set(run_probes(source, "p.py", {}, 0)) == {"a", "b"}
