"""Mutation testing (graders.check.mutants, graders.check.mutants_ledger, graders.check.mutants_run) without a sandbox:
each operator makes the mutant it should on a small function, ids stay put when the cell is edited
elsewhere, the figures are judged as documented, and the committed results are current.

The committed results are tested for *currency* only (their hashes match today's solution cells, test
cells, probes and verdict-deciding grader files; their ids are the ones the operators make; the
equivalents list names only mutants that exist). Whether a chapter meets the target is
`labs check --mutants`'s answer, not this test's: a chapter whose remaining survivors need probe changes
(listed in the results, owned by whoever edits the probes) would otherwise fail every `make test` for
a known shortfall, while a stale file would silently report figures of code that no longer exists.
With current results `labs check --mutants` grades nothing and answers in seconds.
"""

from __future__ import annotations

import ast
import difflib
import json
from pathlib import Path

import pytest

from graders.check import mutants_ledger as ledger
from graders.check.mutants import Mutant, mutants_of, regions

ROOT = Path(__file__).resolve().parent.parent
CELL = '''def f(x, y, n=2):
    """Doc."""
    ### BEGIN SOLUTION
    t = x.detach().clone()
    t.add_(y)
    t += y
    with torch.no_grad():
        s = torch.zeros(n, dtype=torch.int64)
    if n < 3 and not y.any():
        t = t - y
    u = torch.sub(t, y)
    label = ("é", n + 1)
    return t.view(-1)[n]
    ### END SOLUTION
'''
MUTANTS = mutants_of("f", CELL)


def changed(mutant: Mutant, reference: str = CELL) -> tuple[list[str], list[str]]:
    """The reference's lines the mutant changed, and what stands there instead (stripped)."""
    old, new = [], []
    for line in difflib.unified_diff(reference.splitlines(), mutant.source.splitlines(), lineterm="", n=0):
        if line.startswith("-") and not line.startswith("---"):
            old.append(line[1:].strip())
        elif line.startswith("+") and not line.startswith("+++"):
            new.append(line[1:].strip())
    return old, new


@pytest.mark.parametrize(
    ("operator", "variant", "old", "new"),
    [
        ("drop", "pass", "t.add_(y)", "pass"),
        ("detach", "drop", "t = x.detach().clone()", "t = x.clone()"),
        ("detach", "add", "return t.view(-1)[n]", "return t.view(-1)[n].detach()"),
        ("copies", "drop-clone", "t = x.detach().clone()", "t = x.detach()"),
        ("inplace", "add_>add", "t.add_(y)", "t.add(y)"),
        ("augassign", "aug>assign", "t += y", "t = t + y"),
        ("augassign", "assign>aug", "t = t - y", "t -= y"),
        ("binop", "Add>Sub", "t += y", "t -= y"),
        ("binop", "Sub>Add", "t = t - y", "t = t + y"),
        ("swap_operands", "swap", "t = t - y", "t = y - t"),
        ("grad_mode", "drop-no_grad", "with torch.no_grad():", ""),
        ("kwarg", "drop-dtype", "s = torch.zeros(n, dtype=torch.int64)", "s = torch.zeros(n)"),
        (
            "dtype",
            "int64>int32",
            "s = torch.zeros(n, dtype=torch.int64)",
            "s = torch.zeros(n, dtype=torch.int32)",
        ),
        (
            "rename",
            "zeros>ones",
            "s = torch.zeros(n, dtype=torch.int64)",
            "s = torch.ones(n, dtype=torch.int64)",
        ),
        ("rename", "view>reshape", "return t.view(-1)[n]", "return t.reshape(-1)[n]"),
        ("compare", "0:Lt>LtE", "if n < 3 and not y.any():", "if n <= 3 and not y.any():"),
        ("compare", "0:Lt>GtE", "if n < 3 and not y.any():", "if n >= 3 and not y.any():"),
        ("boolop", "And>Or", "if n < 3 and not y.any():", "if n < 3 or not y.any():"),
        ("boolop", "drop0", "if n < 3 and not y.any():", "if not y.any():"),
        ("unary", "drop-Not", "if n < 3 and not y.any():", "if n < 3 and y.any():"),
        ("negate", "not", "if n < 3 and not y.any():", "if not (n < 3 and (not y.any())):"),
        ("const", "+1", "if n < 3 and not y.any():", "if n < 4 and not y.any():"),
        ("index", "+1", "return t.view(-1)[n]", "return t.view(-1)[n + 1]"),
        ("swap_args", "0<>1", "u = torch.sub(t, y)", "u = torch.sub(y, t)"),
        ("const", "-1", 'label = ("é", n + 1)', 'label = ("é", n + 0)'),
        ("default", "+1", "def f(x, y, n=2):", "def f(x, y, n=3):"),
        ("default", "-1", "def f(x, y, n=2):", "def f(x, y, n=1):"),
    ],
)
def test_each_operator_makes_its_mutant(operator: str, variant: str, old: str, new: str) -> None:
    made = [changed(m) for m in MUTANTS if m.operator == operator and m.variant == variant]
    assert ([old], [new] if new else []) in made or (operator == "grad_mode" and _unwrapped(made)), made


def _unwrapped(made: list[tuple[list[str], list[str]]]) -> bool:
    """The ``with`` line gone and its body one level out (the diff shows the body's line moving)."""
    return any(
        old[0] == "with torch.no_grad():" and new == ["s = torch.zeros(n, dtype=torch.int64)"]
        for old, new in made
    )


NEGATIVE = "def g(k=-1):\n    ### BEGIN SOLUTION\n    return k * 0.5\n    ### END SOLUTION\n"


def test_negative_constants_are_spelled_as_the_parser_does() -> None:
    made = {
        m.variant: changed(m, NEGATIVE)[1]
        for m in mutants_of("g", NEGATIVE)
        if m.operator in ("const", "default")
    }
    assert made == {
        "drop-USub": ["def g(k=1):"],
        "+1": ["def g(k=-2):"],
        "-1": ["def g(k=-0):"],
        "0": ["return k * 0.0"],
        "neg": ["return k * -0.5"],
    }


def test_the_region_is_wrapped_in_no_grad() -> None:
    wrapped = [m for m in MUTANTS if m.variant == "add-no_grad"]
    assert [m.id for m in wrapped] == ["f/grad_mode/1.1.4/add-no_grad"]
    body = wrapped[0].source.splitlines()
    assert body[3] == "    with torch.no_grad():" and body[4] == "        t = x.detach().clone()"


def test_ids_are_stable_and_the_order_fixed() -> None:
    assert [m.id for m in mutants_of("f", CELL)] == [m.id for m in MUTANTS]
    assert MUTANTS[0].id == "f/default/0.1.14/+1"
    assert "f/inplace/1.2.4/add_>add" in {m.id for m in MUTANTS}
    edited = CELL.replace('"""Doc."""', '"""Doc,\n\n    longer now."""').replace(
        "    ### END SOLUTION\n", "    ### END SOLUTION\n\n\nz = 1\n"
    )
    assert [m.id for m in mutants_of("f", edited)] == [m.id for m in MUTANTS]
    assert len({m.id for m in MUTANTS}) == len(MUTANTS) == len({m.source for m in MUTANTS})


def test_every_mutant_is_one_parsable_change_inside_the_region() -> None:
    ((begin, end),) = regions(CELL)
    for mutant in MUTANTS:
        ast.parse(mutant.source)
        assert mutant.source != CELL
        if mutant.operator != "default":
            lines = CELL.splitlines()
            kept = mutant.source.splitlines()
            assert kept[:begin] == lines[:begin], mutant.id
            assert kept[len(kept) - (len(lines) - end + 1) :] == lines[end - 1 :], mutant.id


def test_strings_and_docstrings_are_left_alone() -> None:
    assert not [m.id for m in MUTANTS if '"""Doc."""' not in m.source]
    assert not [m.id for m in MUTANTS if '"é"' not in m.source and m.operator != "drop"]


def _exercise(*ids: str) -> ledger.Exercise:
    mutants = tuple(Mutant("e", *mid.split("/")[1:], source=mid) for mid in ids)
    return ledger.Exercise("e", "ref", ("test_e",), "h", mutants)


def test_the_figures_count_equivalents_out_and_stillborn_ones_in() -> None:
    ex = _exercise(*(f"e/op/1.{i}.0/v" for i in range(5)))
    verdicts = ["killed", "stillborn", "survived", "survived", "killed"]
    results = {
        m.id: {"verdict": v, "hash": ex.mutant_hash(m)} for m, v in zip(ex.mutants, verdicts, strict=True)
    }
    equivalent = {"e/op/1.2.0/v": "same values for ints", "e/op/1.4.0/v": "wrong", "e/op/9.9.9/v": "gone"}
    (figures,), problems = ledger.score([ex], results, equivalent)
    assert (figures.killed, figures.stillborn, figures.equivalent) == (2, 1, 1)
    assert [m.id for m in figures.survivors] == ["e/op/1.3.0/v"] and not figures.ok
    assert figures.rate == pytest.approx(3 / 4)
    assert problems == [
        "e/op/1.4.0/v is listed as equivalent but was killed: remove it from the list",
        "e/op/9.9.9/v is listed as equivalent but no operator makes it now",
    ]


def test_a_changed_hash_makes_a_result_stale() -> None:
    ex = _exercise("e/op/1.1.0/v", "e/op/1.2.0/v")
    first, second = ex.mutants
    results = {
        first.id: {"verdict": "killed", "hash": ex.mutant_hash(first)},
        second.id: {"verdict": "killed", "hash": "from-older-code"},
    }
    assert ledger.stale([ex], results) == [(ex, second)]
    (figures,), _ = ledger.score([ex], results, {})
    assert figures.stale == [second.id] and not figures.ok


def committed_labs() -> list[Path]:
    return sorted(
        p.parent.parent / f"{p.name.removesuffix('.mutants.json')}.ipynb"
        for p in (ROOT / "course").glob("*/probes/*.mutants.json")
    )


@pytest.mark.parametrize("lab", committed_labs(), ids=lambda p: p.parent.name)
def test_committed_results_are_current(lab: Path) -> None:
    """Stale results fail (rerun `make mutants MUTANT_CHAPTERS=<chapter>`); the target does not (see above)."""
    found = ledger.exercises(lab)
    results = ledger.read_results(lab)
    out_of_date = [m.id for _, m in ledger.stale(found, results)]
    assert not out_of_date, (
        f"{len(out_of_date)} stale mutation results in {ledger.results_file(lab)} "
        f"(first: {out_of_date[0]}): run make mutants MUTANT_CHAPTERS={lab.parent.name}"
    )
    assert set(results) == {m.id for ex in found for m in ex.mutants}
    text = ledger.results_file(lab).read_text(encoding="utf-8")
    assert ledger.dumps(json.loads(text)) == text, (
        "not as graders.check.mutants_ledger writes it (one line per mutant)"
    )
    _, problems = ledger.score(found, results, ledger.read_equivalents(lab))
    assert not problems


def test_the_report_shows_figures_survivor_diffs_and_failures() -> None:
    from graders.check.mutants_run import LabMutants, report_lines

    survivor = next(m for m in MUTANTS if m.id == "f/inplace/1.2.4/add_>add")
    ex = ledger.Exercise("f", CELL, ("test_f",), "h", tuple(MUTANTS))
    figures = ledger.ExerciseScore("f", len(MUTANTS), len(MUTANTS) - 3, 1, 1, [survivor])
    lines = report_lines(LabMutants("09_x", "lab_x", [ex], [figures], ["a problem"]))
    assert (
        lines[1]
        == f"  f: {len(MUTANTS)}, {len(MUTANTS) - 3}, 1, 1, 1, {(len(MUTANTS) - 2) / (len(MUTANTS) - 1):.1%}"
    )
    diff = next(line for line in lines if line.startswith("SURVIVED"))
    assert "-    t.add_(y)\n+    t.add(y)\n" in diff
    assert lines[-2].startswith("FAIL 09_x/lab_x f: ") and lines[-1] == "FAIL 09_x/lab_x: a problem"


@pytest.mark.parametrize("lab", committed_labs(), ids=lambda p: p.parent.name)
def test_current_results_are_judged_without_a_sandbox(
    lab: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`labs check --mutants` on current results: figures from the committed file, no pool started."""
    from graders.check import mutants_run

    if ledger.stale(ledger.exercises(lab), ledger.read_results(lab)):
        pytest.skip("stale results: test_committed_results_are_current says so")
    monkeypatch.setattr(mutants_run, "Pool", lambda *args, **kwargs: pytest.fail("a sandbox was started"))
    (report,) = mutants_run.check_mutants([lab.parent], tmp_path, 1)
    assert report.graded == 0 and [s.exercise for s in report.scores] == [
        e.grade_id for e in report.exercises
    ]
    assert sum(s.mutants for s in report.scores) == len(ledger.read_results(lab))


def test_a_probe_files_own_grader_imports_are_in_its_hash() -> None:
    """A project module a probe file runs that is not a verdict file decides the inputs of the labs whose
    probes import it, and only theirs."""
    verdict = ledger.verdict_files()
    assert (
        "graders/inside/draws.py" in verdict
        and "graders/check/mutants_verdict.py" in verdict
        and "graders/pipeline.py" not in verdict
    )
    assert (
        ledger.probe_helpers(
            "from graders.inside.probing import probe\nfrom graders.inside.draws import examples\n"
        )
        == ""
    )
    with_layout = ledger.probe_helpers("import torch\nfrom graders.paths import COURSE\n")
    assert with_layout.startswith("graders/paths.py\n") and "COURSE" in with_layout
    assert ledger.probe_helpers("import graders.paths\n") == with_layout
    digits = ledger.probe_helpers("from labutils.digits import load\n")
    assert "labutils/digits.py\n" in digits and "graders/" not in digits


def test_the_verdict_files_are_what_the_grader_imports_however_indirectly() -> None:
    """The set follows the imports: the sandbox's fork core (zygote), the layout the grader reads (coursedir), the
    packages whose __init__ runs on the way; not what only the instructor's side runs."""
    from graders.check import closure
    from graders.check.selfcheck_ledger import check_files

    verdict = set(ledger.verdict_files())
    assert {"zygote/frames.py", "zygote/server.py", "graders/coursedir.py", "graders/__init__.py"} <= verdict
    assert not {f for f in verdict if f.startswith(("graders/nbgrader/", "labs/"))}
    assert {"graders/check/selfcheck.py", "graders/check/cuts.py", "graders/nbgrader/course_root.py"} <= set(
        check_files()
    )
    assert not verdict & set(check_files())
    source = "from graders.boundary import wire\nfrom .sibling import x\n"
    assert {"graders.boundary", "graders.boundary.wire", "graders.check.sibling"} <= closure.imported(
        source, "graders.check.here"
    )


def test_mutants_run_under_the_floor_or_a_multiple_of_the_slowest_control() -> None:
    """Labs 01-04 (controls of 1-3 CPU-s) keep the floor their verdicts were made under; a slow lab's
    mutants get room for its honest run, and a mutant that loops forever still ends."""
    from graders.check.mutants_run import CONTROL_LIMITS, WALL_FACTOR, mutant_limits
    from graders.check.mutants_verdict import LIMITS

    assert mutant_limits(2.5, 9.0) == LIMITS
    slow = mutant_limits(21.2, 40.0)
    assert (slow.cpu_seconds, slow.wall_seconds) == (64, WALL_FACTOR * 40)  # 3 x 21.2 = 63.6, rounded up
    assert slow.memory_bytes == LIMITS.memory_bytes == CONTROL_LIMITS.memory_bytes
    assert CONTROL_LIMITS.cpu_seconds > slow.cpu_seconds and CONTROL_LIMITS.wall_seconds > LIMITS.wall_seconds


def test_a_pools_limits_are_set_for_a_block_and_put_back() -> None:
    from types import SimpleNamespace

    from graders.check.mutants_run import CONTROL_LIMITS, limits_of, mutant_limits

    pool = SimpleNamespace(workers=[SimpleNamespace(limits=CONTROL_LIMITS) for _ in range(2)])
    slow = mutant_limits(30.0, 50.0)
    with pytest.raises(RuntimeError), limits_of(pool, slow):
        assert [w.limits for w in pool.workers] == [slow, slow]
        raise RuntimeError("a job failed")
    assert [w.limits for w in pool.workers] == [CONTROL_LIMITS, CONTROL_LIMITS]


def test_results_are_saved_as_they_come() -> None:
    """A stopped run keeps every verdict saved so far: the recorder saves every SAVE_EVERY verdicts."""
    from graders.check import mutants_run

    saves: list[int] = []
    results: dict[str, dict] = {}
    record = mutants_run._recorder(results, lambda: saves.append(len(results)))
    for i in range(2 * mutants_run.SAVE_EVERY + 3):
        record(f"m{i}", {"verdict": "killed", "hash": "h"})
    assert (
        saves == [mutants_run.SAVE_EVERY, 2 * mutants_run.SAVE_EVERY]
        and len(results) == 2 * mutants_run.SAVE_EVERY + 3
    )


def test_a_kill_by_the_probes_is_tried_under_the_next_salt_and_nothing_else_is() -> None:
    from graders.check.mutants_verdict import needs_another_salt

    assert needs_another_salt({"verdict": "killed"})
    assert not needs_another_salt(
        {"verdict": "killed", "note": "timeout"}
    )  # a loop ends nowhere under any salt
    assert not needs_another_salt({"verdict": "survived"})
    assert not needs_another_salt({"verdict": "stillborn", "note": "crashed"})


def test_a_mutant_that_survives_a_later_salt_survives() -> None:
    from graders.check.mutants_verdict import verdict_over_salts

    killed = {"verdict": "killed"}
    assert verdict_over_salts([killed, killed, killed]) == killed
    assert verdict_over_salts([killed, {"verdict": "survived"}]) == {
        "verdict": "survived",
        "note": "killed under 1 salt(s), survived salt 2",
    }
    assert verdict_over_salts([{"verdict": "survived"}]) == {"verdict": "survived"}
