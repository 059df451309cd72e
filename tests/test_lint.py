"""`labs lint`: the conventions, as file:cell: messages."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat

from labs.lint import fix, lint
from tests.conftest import FIXTURES
from tests.inprocess import labs_here


def test_fixture_course_is_clean():
    result = labs_here("lint", str(FIXTURES / "course"))
    assert result.returncode == 0, result.stdout
    assert "0 problems" in result.stdout


def test_duplicate_grade_id_is_reported_with_file_and_cell():
    path = FIXTURES / "failing" / "dup_grade_id" / "lab_dup.ipynb"
    problems = [str(p) for p in lint([path])]
    assert any(p.startswith(f"{path}:6: duplicate grade_id 'test_scale'") for p in problems), problems


def test_grade_ids_clash_across_notebooks_of_one_chapter(tmp_path: Path):
    chapter = tmp_path / "ch"
    chapter.mkdir()
    lab = FIXTURES / "course" / "fx_basic" / "lab_basic.ipynb"
    shutil.copy(lab, chapter / "lab_a.ipynb")
    shutil.copy(lab, chapter / "lab_b.ipynb")
    messages = [p.message for p in lint(sorted(chapter.glob("*.ipynb")))]
    assert sum("duplicate grade_id" in m for m in messages) == 4


def test_invalid_json_is_one_problem_not_a_crash(broken_notebook: Path):
    path = broken_notebook
    result = labs_here("lint", str(path))
    assert result.returncode == 1
    assert f"{path}: not valid JSON (line" in result.stdout


def _mutated(tmp_path: Path, change) -> Path:
    nb = nbformat.read(FIXTURES / "course" / "fx_basic" / "lab_basic.ipynb", as_version=4)
    change(nb)
    path = tmp_path / "lab_x.ipynb"
    nbformat.write(nb, path)
    (tmp_path / "probes").mkdir(exist_ok=True)
    shutil.copy2(
        FIXTURES / "course" / "fx_basic" / "probes" / "lab_basic.py", tmp_path / "probes" / "lab_x.py"
    )
    shutil.copy2(
        FIXTURES / "course" / "fx_basic" / "probes" / "lab_basic.rules.toml",
        tmp_path / "probes" / "lab_x.rules.toml",
    )
    return path


def test_lab_needs_a_probe_per_graded_cell(tmp_path: Path):
    path = _mutated(tmp_path, lambda nb: None)
    probes = tmp_path / "probes" / "lab_x.py"
    probes.write_text(
        re.sub(r'@probe\("test_relu_grad".*?\)\n(?=def )', "@staticmethod\n", probes.read_text(), flags=re.S)
    )
    assert [str(p).split(": ", 1)[1] for p in lint([path])] == [
        f"graded cell test_relu_grad has no probe in {probes}"
    ]
    probes.unlink()
    assert "no probe file" in str(lint([path])[0])


def test_each_convention_is_enforced(tmp_path: Path):
    cases = {
        "tagged 'parameters'": lambda nb: nb.cells[0].metadata.update(tags=[]),
        "must define SMOKE": lambda nb: setattr(nb.cells[0], "source", 'DEVICE = "auto"'),
        "must have points > 0": lambda nb: nb.cells[5].metadata.nbgrader.update(points=0),
        "lacks '### BEGIN SOLUTION'": lambda nb: setattr(
            nb.cells[4], "source", "def scale(t, f):\n    return t"
        ),
        "BEGIN HIDDEN TESTS": lambda nb: [
            setattr(c, "source", "assert True")
            for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade")
        ],
        "not stripped": lambda nb: setattr(nb.cells[3], "execution_count", 3),
        "solution markers outside a solution cell": lambda nb: setattr(
            nb.cells[2], "source", "Write it between ### BEGIN SOLUTION and ### END SOLUTION"
        ),
    }
    for expected, change in cases.items():
        problems = [str(p) for p in lint([_mutated(tmp_path, change)])]
        assert any(expected in p for p in problems), (expected, problems)


def test_fix_strips_outputs_and_is_idempotent(tmp_path: Path):
    def add_output(nb):
        nb.cells[3].outputs = [nbformat.v4.new_output("stream", text="hi")]
        nb.cells[3].execution_count = 1
        nb.metadata["widgets"] = {}

    path = _mutated(tmp_path, add_output)
    assert lint([path])
    assert fix(path) is True
    assert lint([path]) == []
    assert fix(path) is False


def test_missing_path_exits_2_with_one_line():
    result = labs_here("lint", "no/such/folder")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: no/such/folder: no such file or directory"


def test_a_solution_retyped_from_a_lesson_is_flagged():
    lab = FIXTURES / "failing" / "copied" / "lab_copied.ipynb"
    copied = [p for p in lint([lab]) if "near-copy" in p.message]
    assert len(copied) == 1 and copied[0].cell == 4, copied
    assert "standardise: solution is a near-copy of 1_lesson.ipynb cell 3" in copied[0].message


def test_a_solution_copied_from_a_visible_test_is_flagged(tmp_path: Path):
    def leak(nb):
        # The visible part of a test cell carries a working reference: the release shows it.
        nb.cells[5].source = (
            "def _reference(t, factor):\n    out = t.clone()\n    out.mul_(factor)\n    return out\n\n"
            + nb.cells[5].source
        )
        nb.cells[4].source = (
            "def scale(t, factor):\n    ### BEGIN SOLUTION\n    result = t.clone()\n"
            "    result.mul_(factor)\n    return result\n    ### END SOLUTION\n"
        )

    messages = [p.message for p in lint([_mutated(tmp_path, leak)])]
    assert any(
        "scale: solution is a near-copy of lab_x.ipynb cell" in m and "(in the release)" in m
        for m in messages
    ), messages


def test_solutions_written_afresh_pass_the_copy_rule():
    assert not [
        p for p in lint([FIXTURES / "course" / "fx_basic" / "lab_basic.ipynb"]) if "near-copy" in p.message
    ]


def test_copy_measure_ignores_layout_comments_and_short_runs():
    from labs import copies

    a = copies.normalised("def f(x):\n    # double it\n    return x * 2 + torch.ones(3)\n")
    b = copies.normalised("def f( x ) :\n    return (x*2) + torch.ones(3)  # same\n")
    assert a == b
    assert copies.coverage(list("abcdef"), list("xaybzc")) == 0.0  # matches shorter than MIN_RUN are chance
    assert copies.coverage(list("abcdef"), list("zzabcdzz")) == 4 / 6


def test_lessons_need_three_exercises_each_followed_by_its_self_check(tmp_path: Path):
    nb = nbformat.read(FIXTURES / "course" / "fx_basic" / "1_passes.ipynb", as_version=4)
    assert not lint([FIXTURES / "course" / "fx_basic" / "1_passes.ipynb"])
    checks = [i for i, c in enumerate(nb.cells) if "self-check" in c.metadata.get("tags", [])]
    del nb.cells[checks[0]]
    path = tmp_path / "1_lesson.ipynb"
    nbformat.write(nb, path)
    messages = [str(p) for p in lint([path])]
    assert (
        f"{path}:{checks[0] - 1}: exercise cell must be followed by a code cell tagged 'self-check'"
        in messages
    )
    nb.cells = [c for c in nb.cells if "exercise" not in c.metadata.get("tags", [])]
    nbformat.write(nb, path)
    messages = [str(p) for p in lint([path])]
    assert f"{path}: a lesson needs at least 3 code cells tagged 'exercise' (it has 0)" in messages
    assert sum("self-check cell must directly follow" in m for m in messages) == 2


def test_solutions_in_several_regions_or_fragments_are_still_measured():
    from labs import copies

    cell = (
        "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, lam):\n"
        "        ### BEGIN SOLUTION\n        ctx.lam = lam\n        return x.view_as(x)\n        ### END SOLUTION\n"
        "    @staticmethod\n    def backward(ctx, g):\n        ### BEGIN SOLUTION\n"
        "        return -ctx.lam * g, None\n        ### END SOLUTION\n"
    )
    code = copies.solution_code(cell)
    assert copies.normalised(code) is not None
    lesson = copies.shown("lesson", "ctx.lam = lam\nreturn x.view_as(x)\nreturn -ctx.lam * g, None")
    assert copies.nearest_copy(code, [lesson]) is not None
    assert copies.normalised("x = (1,\n") is not None  # a fragment: raw tokens, never skipped


def test_every_rule_of_the_authoring_guide_is_enforced(tmp_path: Path):
    def meta(index: int, **change):
        return lambda nb: nb.cells[index].metadata.nbgrader.update(change)

    def source(index: int, text: str):
        return lambda nb: setattr(nb.cells[index], "source", text)

    cases = {
        "test cell 'test_scale' must be locked": meta(5, locked=False),
        "test cell 'test_scale' lacks '### BEGIN HIDDEN TESTS'": lambda nb: setattr(
            nb.cells[5], "source", nb.cells[5].source.split("### BEGIN HIDDEN TESTS")[0]
        ),
        "test cell 'test_scale' lacks '### END HIDDEN TESTS'": lambda nb: setattr(
            nb.cells[5], "source", nb.cells[5].source.replace("### END HIDDEN TESTS", "")
        ),
        "parameters cell must hold only DEVICE and SMOKE (found STEPS": source(
            0, 'DEVICE = "auto"\nSMOKE = False\nSTEPS = 3'
        ),
        "setup(DEVICE) without a seed": source(1, "from labutils import setup\nDEVICE = setup(DEVICE)"),
        "cell 1 must be `DEVICE = setup(DEVICE, seed=0)`": source(1, "import torch"),
        "nbgrader metadata of 'test_scale' lacks schema_version": lambda nb: nb.cells[
            5
        ].metadata.nbgrader.pop("schema_version"),
        "nbgrader schema_version must be 3, got 1": meta(4, schema_version=1),
        "cell 2 must be the markdown title": source(2, "## Not a title"),
        "solution cell 'scale' must define a function or class with a docstring": lambda nb: setattr(
            nb.cells[4],
            "source",
            nb.cells[4].source.replace('"""Return t * factor as a new tensor (t unchanged)."""', ""),
        ),
    }
    for expected, change in cases.items():
        problems = [str(p) for p in lint([_mutated(tmp_path, change)])]
        assert any(expected in p for p in problems), (expected, problems)
    assert lint([_mutated(tmp_path, lambda nb: None)]) == []


def test_a_lesson_file_needs_its_number_prefix(tmp_path: Path):
    lesson = tmp_path / "passes.ipynb"
    shutil.copy(FIXTURES / "course" / "fx_basic" / "1_passes.ipynb", lesson)
    assert [p.message for p in lint([lesson])] == [
        "a lesson's file name starts with its number: N_passes.ipynb (1_, 2_, 3_ ...)"
    ]
    shutil.copy(lesson, tmp_path / "1_passes.ipynb")
    assert lint([tmp_path / "1_passes.ipynb"]) == []


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_probes_need_docstrings_and_myths_an_experiment_then_a_rule(tmp_path: Path):
    path = _mutated(tmp_path, lambda nb: None)
    probes = tmp_path / "probes" / "lab_x.py"
    probes.write_text(probes.read_text().replace('    """relu_grad on random inputs"""\n', ""))
    assert [str(p) for p in lint([path])] == [
        f"{probes}: line {_line_of(probes, 'def relu_grad(')}: probe relu_grad needs a docstring naming the check (students read its first paragraph "
        "in their feedback)"
    ]
    nb = nbformat.read(FIXTURES / "course" / "fx_basic" / "1_passes.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("**Myth:** views copy."))
    lesson = tmp_path / "1_myth.ipynb"
    nbformat.write(nb, lesson)
    assert [p.message for p in lint([lesson])] == [
        "a Myth: needs an experiment (a code cell) after it, then a Rule: cell"
    ]
    nb.cells += [
        nbformat.v4.new_code_cell("assert True"),
        nbformat.v4.new_markdown_cell("**Rule:** they do not."),
    ]
    nbformat.write(nb, lesson)
    assert lint([lesson]) == []


def test_every_rule_a_prompt_states_is_mapped_to_what_enforces_it(tmp_path: Path):
    """A rule sentence without an entry, an entry the probes do not back, and a stale entry: one line each."""

    def say(nb):
        nb.cells[4].source = nb.cells[4].source.replace(
            "(t unchanged).", "(t unchanged). Never call `torch.mul`. The function must be **iterative**."
        )

    path = _mutated(tmp_path, say)
    rules = tmp_path / "probes" / "lab_x.rules.toml"
    messages = [p.message for p in lint([path])]
    assert sum("does not map to its enforcement" in m for m in messages) == 2, messages
    rules.write_text(
        rules.read_text() + '"Never call `torch.mul`" = "forbid"\n"must be **iterative**" = "iterative"\n'
        '"t is returned as is" = "contract"\n'
    )
    messages = [p.message for p in lint([path])]
    assert any(
        "'Never call `torch.mul`' = 'forbid': no probe of the exercise declares forbid" in m for m in messages
    )
    assert any("declares iterative=True" in m for m in messages)
    assert any(
        "'t is returned as is': no rule sentence of the exercise says this any more" in m for m in messages
    )
    probes = tmp_path / "probes" / "lab_x.py"
    probes.write_text(
        probes.read_text().replace(
            '@probe("test_scale"', '@probe("test_scale", iterative=True, forbid=("mul",)'
        )
    )
    rules.write_text(rules.read_text().replace('"t is returned as is" = "contract"\n', ""))
    assert not [p for p in lint([path]) if "rules.toml" in str(p) or "enforcement" in p.message]


def test_every_graded_exercise_lists_its_clauses_each_with_a_case(tmp_path: Path):
    from labs.lint_clauses import clauses_have_cases

    path = _mutated(tmp_path, lambda nb: None)
    nb = nbformat.read(path, as_version=4)
    assert clauses_have_cases(path, nb) == []
    probes = tmp_path / "probes" / "lab_x.py"
    text = probes.read_text()
    probes.write_text(text.replace('"draw.sizes(0, 40"', '"draw.sizes(1, 40"'))
    assert [p.message.split(": ", 1)[1] for p in clauses_have_cases(path, nb)] == [
        "clause 'any length, empty included' names the case 'draw.sizes(1, 40', which is not in the probe's code "
        "(nor one of ['contracts'])"
    ]
    probes.write_text(re.sub(r', clauses=\{"returns.*?\}\)', ")", text, flags=re.S))
    assert [p.message for p in clauses_have_cases(path, nb)] == [
        "probe test_scale (lab_x.py) lists no clauses of the exercise's statement: @probe(..., clauses={clause: case})"
    ]
