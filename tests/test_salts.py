"""A grade does not depend on the salt: the fixture lab's probes, run in-process over 1,000 salts, tell a
mistake that shows only on some sizes (one parity, the largest) from the reference under every one, because
`Draw.sizes` puts each size domain's edges among the cases by construction."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from graders.inside.probing import Draw, edges, load_probes, run_probe
from tests.records import compare_wire

FIXTURE = Path(__file__).parent / "fixtures" / "course" / "fx_basic"
SALTS = range(1000)
# Wrong only on even sizes (the attack that earned full marks in 6% of CI runs while sizes were drawn alone),
# and wrong only on the largest size of the probe's domain.
EVEN_SIZES_WRONG = (
    "def scale(t, factor):\n    return t * factor if t.shape[0] % 2 else t\n\n"
    "def relu_grad(x):\n    return (x > 0).to(x.dtype) if len(x) % 2 else x\n"
)
LARGEST_WRONG = (
    "def scale(t, factor):\n    return t if t.shape[0] >= 6 else t * factor\n\n"
    "def relu_grad(x):\n    return x if len(x) >= 40 else (x > 0).to(x.dtype)\n"
)


def _namespace(code: str) -> dict:
    ns: dict = {"__name__": "__main__"}
    exec("import torch\n" + code, ns)  # the fixture's own code and this file's: trusted
    return ns


def _reference() -> dict:
    nb = nbformat.read(FIXTURE / "lab_basic.ipynb", as_version=4)
    solutions = [c.source for c in nb.cells if c.cell_type == "code" and "### BEGIN SOLUTION" in c.source]
    return _namespace("\n".join(solutions))


@pytest.fixture(scope="module")
def probes() -> dict:
    path = FIXTURE / "probes" / "lab_basic.py"
    return load_probes(path.read_text(), str(path))


@pytest.fixture(scope="module")
def reference_runs(probes: dict) -> dict:
    """Each probe's record from the reference under each salt (both wrong solutions are compared with it)."""
    reference = _reference()
    return {
        (grade_id, salt): run_probe(found, reference, salt)
        for grade_id, found in probes.items()
        for salt in SALTS
    }


@pytest.mark.parametrize("wrong", [EVEN_SIZES_WRONG, LARGEST_WRONG], ids=["even-sizes", "largest-size"])
def test_a_size_class_mistake_loses_under_every_salt(probes: dict, reference_runs: dict, wrong: str) -> None:
    student = _namespace(wrong)
    for grade_id, found in probes.items():
        passed = [
            salt
            for salt in SALTS
            if compare_wire(run_probe(found, student, salt), reference_runs[(grade_id, salt)]).ok
        ]
        assert not passed, f"{grade_id}: the wrong solution matched the reference under salts {passed[:10]}"


def test_the_reference_matches_itself_under_every_salt(probes: dict) -> None:
    reference, again = _reference(), _reference()
    for found in probes.values():
        assert all(
            compare_wire(run_probe(found, again, s), run_probe(found, reference, s)).ok for s in range(50)
        )


def test_sizes_hold_the_edges_then_draws() -> None:
    draw = Draw(3, "probe")
    assert edges(0, 6) == [0, 1, 5, 6] and edges(1, 1) == [1, 1] and edges(2, 3) == [2, 3, 2, 3]
    got = draw.sizes(0, 6, 7)
    assert got[:4] == [0, 1, 5, 6] and len(got) == 7 and all(0 <= v <= 6 for v in got)
    assert Draw(1, "p").sizes(1, 1, 3) == [1, 1, 1]
    assert Draw(1, "p").sizes(2, 3, 1) == [2, 3]  # the edges even when count asks for fewer
    assert Draw(1, "p").sizes(0, 100, 9) == Draw(1, "p").sizes(0, 100, 9)
    assert Draw(1, "p").sizes(0, 100, 9) != Draw(2, "p").sizes(0, 100, 9)
    with pytest.raises(ValueError, match="low 3 > high 2"):
        draw.sizes(3, 2, 1)


def test_a_self_check_verdict_holds_only_under_every_salt() -> None:
    from graders.check.selfcheck import Verdict, held_under_every_salt

    rounds = [[True, True, False], [True, False, True], [False, False, False]]  # per salt: each version ok?
    got = held_under_every_salt(
        [
            [
                Verdict("lab", f"v{i}", "loses", [], ok, note="" if ok else f"failed {i}")
                for i, ok in enumerate(oks)
            ]
            for oks in rounds
        ]
    )
    assert [v.ok for v in got] == [False, False, False]
    assert [v.note for v in got] == ["under salt 3 of 3: failed 0", "under salt 2 of 3: failed 1", "failed 2"]
    assert held_under_every_salt([[Verdict("lab", "v", "full", [], True)]])[0].ok


def test_a_probe_is_described_by_its_docstrings_first_paragraph_on_one_line() -> None:
    from graders.inside.probing import Probe

    def wrapped(ns: dict, draw: Draw) -> None:
        """scale: values, in place or not,
        empty inputs

        Instructor's notes: the fourth case is the one a copy misses."""

    assert Probe("test_x", wrapped).description == "scale: values, in place or not, empty inputs"
