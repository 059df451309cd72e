"""A self-check of one exercise runs and scores only that exercise's test cells and probes, and stops after them."""

from __future__ import annotations

from graders.grader.cells import reference_cells
from graders.grader.grading import focused, job_for, load_lab
from graders.inside.job import run_probes
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
    assert [c.key for c in job.cells] == [
        c.key for c in everything.cells[: first_test + 1]
    ]  # nothing after it
    assert job.probes_only == tests[:1] and everything.probes_only == []
    assert [t.grade_id for t in one.tests] == tests[:1] and set(one.probes) == {tests[0]}


def test_run_probes_runs_only_the_probes_it_is_asked_for() -> None:
    source = (
        "from graders.inside.probing import probe\n"
        "@probe('a')\ndef a(ns, draw):\n    '''a'''\n    return 1\n"
        "@probe('b')\ndef b(ns, draw):\n    '''b'''\n    raise AssertionError('must not run')\n"
    )
    ran = run_probes(source, "p.py", {}, 0, only=["a"])
    assert list(ran) == ["a"] and ran["a"]["value"] == 1
    assert set(run_probes(source, "p.py", {}, 0)) == {"a", "b"}


def test_a_solution_that_binds_a_name_a_later_cell_binds_runs_to_the_end(tmp_path) -> None:
    """In the whole notebook the later cell's definition is what the probe would call: no cut then."""
    from graders.check.cuts import bound_names
    from graders.check.selfcheck import versions

    lab = load_lab(LAB)
    wrong = tmp_path / "fx_basic"
    wrong.mkdir()
    (wrong / "scale__alone.py").write_text("def scale(t, factor):\n    return t\n")
    (wrong / "scale__and_relu_grad.py").write_text(
        "def scale(t, factor):\n    return t\n\ndef relu_grad(x):\n    return x\n"
    )
    (wrong / "scale__magic.py").write_text("%time 1\ndef scale(t, factor):\n    return t\n")
    files = [("scale", p) for p in sorted(wrong.glob("*.py"))]
    cut = {v.name.split()[2]: v.cut for v in versions(lab, lab.source, files) if v.name.startswith("wrong")}
    assert cut == {"scale__alone.py": True, "scale__and_relu_grad.py": False, "scale__magic.py": False}
    assert bound_names(
        "import torch.nn as nn\nfrom a import b as c\nfor i, (j, k) in x: pass\nclass K: y = 1\n"
    ) == {"nn", "c", "i", "j", "k", "K"}
