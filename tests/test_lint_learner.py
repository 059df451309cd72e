"""`labs lint --learner-rules`: one sitting per lesson, and every torch name of a lab's solution taught before."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import nbformat
import pytest

from labs.lint import lint
from labs.lint_rules import MAX_LESSON_CELLS, MAX_LESSON_WORDS, one_sitting
from labs.lint_taught import basics, imports, names_used, taught_before, torch_vocabulary
from labs.notebooks import BadInput, read
from tests.conftest import FIXTURES, ROOT
from tests.inprocess import labs_here

LEARNER = FIXTURES / "learner"
LAB = LEARNER / "01_basics" / "lab_basics.ipynb"


def _names(source: str):
    tree = ast.parse(source)
    aliases, others = imports([tree])
    return names_used(tree, aliases, others, torch_vocabulary())


def test_names_are_resolved_through_the_imports():
    used = _names(
        "import math\nimport numpy as np\nimport torch.distributed as dist\nfrom torch.export import Dim\n"
        "dist.isend(t, 1).wait()\nnn.Linear(2, 2)\nF.relu(x)\nDim('b')\nmath.prod(s)\nnp.random.default_rng()\n"
        "ctx.needs_input_grad\nloader.generator\nx.not_a_torch_name\n'TORCH_LOGS'\n"
    )
    assert {
        "torch.distributed.isend",
        "torch.nn.Linear",
        "torch.nn.functional.relu",
        "torch.export.Dim",
    } <= used.qualified
    assert not any(q.startswith(("math", "numpy")) for q in used.qualified)
    assert {"wait", "needs_input_grad", "generator"} <= used.attributes
    assert "not_a_torch_name" not in used.attributes and "prod" not in used.attributes
    assert used.env_vars == {"TORCH_LOGS"}


def test_a_name_no_lesson_of_the_chapters_so_far_shows_is_named_with_lab_and_exercise():
    problems = [str(p) for p in taught_before(LAB, read(LAB))]
    where = f"{LAB}:4: lab_basics exercise 'count_calls'"
    assert problems == [
        f"{where}: `{name}` not shown in any lesson of chapters 01..01"
        for name in ("torch.export.Dim", "torch.nn.functional.relu", ".remove", "TORCH_FR_BUFFER_SIZE")
    ]


def test_a_later_chapter_counts_for_a_lab_after_it(tmp_path: Path):
    course = tmp_path / "course"
    shutil.copytree(LEARNER, course)
    moved = course / "02_later" / "lab_later.ipynb"
    (course / "01_basics" / "lab_basics.ipynb").rename(moved)
    problems = [p.message for p in taught_before(moved, read(moved))]
    assert problems == [
        "lab_later exercise 'count_calls': `torch.export.Dim` not shown in any lesson of chapters 01..02"
    ]


def test_a_lab_outside_a_numbered_chapter_is_not_judged():
    lab = FIXTURES / "course" / "fx_basic" / "lab_basic.ipynb"
    assert taught_before(lab, read(lab)) == []


def test_the_basics_are_read_from_the_authoring_guide(tmp_path: Path):
    allowed = basics()
    assert {".append", "torch.tensor", ".shape"} <= allowed and ".remove" not in allowed
    guide = tmp_path / "authoring.md"
    guide.write_text("# no list here\n")
    with pytest.raises(BadInput, match=f"^{guide}: no fenced block after"):
        basics(guide)


def test_a_lesson_longer_than_one_sitting_is_flagged():
    too_long = LEARNER / "02_later" / "2_too_long.ipynb"
    nb = read(too_long)
    assert [p.message.split(" more than")[0] for p in one_sitting(too_long, nb)] == [
        f"{len(nb.cells)} cells,",
        "2,103 words of markdown,",
    ]


def test_one_sitting_allows_exactly_its_limits(tmp_path: Path):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("w " * (MAX_LESSON_WORDS // MAX_LESSON_CELLS))
            for _ in range(MAX_LESSON_CELLS)
        ]
    )
    nb.cells[0].source += "w " * (MAX_LESSON_WORDS % MAX_LESSON_CELLS)
    assert one_sitting(tmp_path / "1_x.ipynb", nb) == []
    nb.cells.append(nbformat.v4.new_markdown_cell("w"))
    assert len(one_sitting(tmp_path / "1_x.ipynb", nb)) == 2


def test_the_rules_are_part_of_lint_unless_left_out():
    with_rules = [str(p) for p in lint([LAB, LEARNER / "02_later" / "2_too_long.ipynb"])]
    without = [str(p) for p in lint([LAB, LEARNER / "02_later" / "2_too_long.ipynb"], learner_rules=False)]
    assert sum("not shown in any lesson" in p for p in with_rules) == 4
    assert sum("one sitting" in p for p in with_rules) == 2
    assert not any("not shown in any lesson" in p or "one sitting" in p for p in without)


def test_labs_lint_prints_each_problem():
    result = labs_here("lint", str(LEARNER))
    assert result.returncode == 1
    assert (
        f"{LAB}:4: lab_basics exercise 'count_calls': `.remove` not shown in any lesson of chapters 01..01"
        in result.stdout.splitlines()
    )
    assert "not shown in any lesson" not in labs_here("lint", "--no-learner-rules", str(LEARNER)).stdout


def test_the_course_passes_both_rules():
    labs_, lessons = (
        sorted((ROOT / "course").glob("0*/lab_*.ipynb")),
        sorted((ROOT / "course").glob("0*/[0-9]*.ipynb")),
    )
    assert labs_ and lessons
    assert [str(p) for lab in labs_ for p in taught_before(lab, read(lab))] == []
    assert [str(p) for lesson in lessons for p in one_sitting(lesson, read(lesson))] == []
