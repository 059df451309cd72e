"""The lesson rule `self_checks_hide_the_answer`: a self-check shows no answer before it runs."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat import NotebookNode

from labs.lint import fix
from labs.lint_rules import self_checks_hide_the_answer
from labs.scaffold import lesson_notebook
from tests.conftest import FIXTURES

LESSON = FIXTURES / "course" / "fx_basic" / "1_passes.ipynb"
GOOD_CHECK = (
    "shape = tuple(x.t().shape)\n"
    "exercises.check('the shape of x.t()', prediction, shape, why='t() swaps the two dims')"
)


def _lesson(tmp_path: Path, check_source: str, hidden: bool = True) -> tuple[Path, NotebookNode, int]:
    """The fixture lesson with its first self-check replaced by ``check_source`` (others made compliant)."""
    nb = nbformat.read(LESSON, as_version=4)
    checks = [i for i, c in enumerate(nb.cells) if "self-check" in c.metadata.get("tags", [])]
    for i in checks:
        nb.cells[i].source = GOOD_CHECK
        nb.cells[i].metadata["jupyter"] = {"source_hidden": True}
    nb.cells[checks[0]].source = check_source
    if not hidden:
        del nb.cells[checks[0]].metadata["jupyter"]
    path = tmp_path / "1_lesson.ipynb"
    nbformat.write(nb, path)
    return path, nb, checks[0]


def _messages(path: Path, nb: NotebookNode) -> list[str]:
    return [str(p) for p in self_checks_hide_the_answer(path, nb)]


def test_a_compliant_lesson_passes(tmp_path: Path):
    path, nb, _ = _lesson(tmp_path, GOOD_CHECK)
    assert _messages(path, nb) == []
    computed = (
        "shares = x.t().data_ptr() == x.data_ptr()\n"
        "exercises.check('view', prediction, shares, why='t() swaps strides over one storage of float32')"
    )
    path, nb, _ = _lesson(tmp_path, computed)
    assert _messages(path, nb) == []  # a name bound to a computation, digits inside a name: fine


def test_the_committed_fixture_and_the_scaffold_follow_the_rule(tmp_path: Path):
    assert _messages(LESSON, nbformat.read(LESSON, as_version=4)) == []
    scaffolded = lesson_notebook("A title")
    assert _messages(tmp_path / "1_new.ipynb", scaffolded) == []
    visible = nbformat.read(LESSON, as_version=4)
    index = next(i for i, c in enumerate(visible.cells) if "self-check" in c.metadata.get("tags", []))
    visible.cells[index].source = "exercises.check('q', prediction, x.sum().item(), why='0 + 1 + ... + 5')"
    del visible.cells[index].metadata["jupyter"]
    assert _messages(LESSON, visible) == [
        f'{LESSON}:{index}: self-check cell {index} must be collapsed: cell metadata "jupyter": {{"source_hidden": true}}',
        f"{LESSON}:{index}: self-check cell {index}: why= gives the answer away (the number '0'): explain the mechanism",
    ]


def test_each_give_away_is_one_line_naming_notebook_and_cell(tmp_path: Path):
    cases = {
        "exercises.check('q', prediction, 3, why='it adds')": "the expected answer '3' is a literal: compute it by the cell's experiment",
        "exercises.check('q', prediction, (2, 3), why='it adds')": "the expected answer '(2, 3)' is a literal",
        "answer = -1\nexercises.check('q', prediction, answer, why='it adds')": "the expected answer 'answer' is bound to a literal in the cell",
        "raised = False\nexercises.check('q', prediction, raised, why='it adds')": "the expected answer 'raised' is bound to a literal in the cell",
        "exercises.check('q', prediction, x.sum().item(), why='0 + 1 + 2 = 3')": "why= gives the answer away (the number '0')",
        "exercises.check('q', prediction, x.is_contiguous(), why='a transpose is not: False')": "why= gives the answer away ('False')",
        "exercises.check('q', prediction, x.is_contiguous(), why='No, the strides are swapped')": "why= gives the answer away ('No')",
        "exercises.check('q', prediction, x.shape, why=f'the shape is {x.shape}')": "why= interpolates a value (an f-string)",
        "exercises.check('q', prediction, x.shape, why='shape (batch, 16, 3)')": "why= gives the answer away (the number '16')",
        "exercises.check_function('sq', square, [((2,), 4)], why='n times n')": "a check_function case's expected result is a literal",
        "print(prediction)": "calls no exercises.check or exercises.check_function",
    }
    for source, expected in cases.items():
        path, nb, index = _lesson(tmp_path, source)
        messages = _messages(path, nb)
        assert len(messages) == 1, (source, messages)
        assert messages[0].startswith(f"{path}:{index}: self-check cell {index}"), messages
        assert expected in messages[0], (expected, messages)
        assert "\n" not in messages[0]


def test_a_visible_self_check_is_flagged(tmp_path: Path):
    path, nb, index = _lesson(tmp_path, GOOD_CHECK, hidden=False)
    assert _messages(path, nb) == [
        f"{path}:{index}: self-check cell {index} must be collapsed: cell metadata "
        '"jupyter": {"source_hidden": true}'
    ]


def test_fix_keeps_a_collapsed_cell_collapsed(tmp_path: Path):
    path, _, index = _lesson(tmp_path, GOOD_CHECK)
    nb = nbformat.read(path, as_version=4)
    nb.cells[index].metadata["jupyter"]["outputs_hidden"] = True
    nb.cells[index].metadata["scrolled"] = True
    nbformat.write(nb, path)
    fix(path)
    fixed = nbformat.read(path, as_version=4)
    assert fixed.cells[index].metadata["jupyter"] == {"source_hidden": True}
    assert "scrolled" not in fixed.cells[index].metadata
    assert _messages(path, fixed) == []
