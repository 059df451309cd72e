"""`labs run --answer-leaks`: no exercise's answer is on the page between its heading and the exercise."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
import torch
from nbformat.v4 import new_output

from labs.run import execute
from labs.run.leaks import appears, find_leaks, read_answers
from labutils import exercises
from labutils.exercises import answer_terms, cell_key
from tests.conftest import FIXTURES, labs

LESSON = FIXTURES / "leaks" / "1_leaks.ipynb"


def _executed(printed: dict[int, str]) -> nbformat.NotebookNode:
    """The fixture lesson as a run leaves it: ``printed`` text as the output of the given cells."""
    nb = nbformat.read(LESSON, as_version=4)
    for index, text in printed.items():
        nb.cells[index].outputs = [new_output("stream", name="stdout", text=text)]
    return nb


def _answers(nb: nbformat.NotebookNode, terms: dict[int, list[str]]) -> dict[str, set[str]]:
    return {cell_key(nb.cells[i].source): set(found) for i, found in terms.items()}


def test_an_answer_in_an_output_or_in_the_prompt_is_a_leak():
    nb = _executed({5: "made: torch.float32\n"})
    leaks = find_leaks(nb, _answers(nb, {8: ["float32"], 11: ["Linear"], 14: ["weight"], 17: ["bias"]}))
    assert [(leak.exercise, leak.cell, leak.term, leak.where) for leak in leaks] == [
        (7, 5, "float32", "output"),
        (10, 9, "Linear", "markdown"),
    ]
    assert leaks[0].message() == (
        "answer leak: the answer 'float32' of the exercise at cell 7 is in the output of "
        "cell 5, before the prediction"
    )


def test_only_the_cells_since_the_heading_before_the_exercise_count():
    nb = _executed({5: "made: torch.float32\n"})
    nb.cells[4].source = "The weight comes first.\n\n" + nb.cells[4].source  # before the section's heading
    nb.cells[3].source += "\nprint('weight')"  # an earlier section's code: its outputs are not read either
    assert find_leaks(nb, _answers(nb, {14: ["weight"]})) == []
    nb.cells[12].source += " The weight is 2-d."  # the exercise's own prompt
    assert [leak.cell for leak in find_leaks(nb, _answers(nb, {14: ["weight"]}))] == [12]


def test_a_self_check_that_prints_the_answer_before_its_verdict_leaks_it():
    nb = _executed({8: "made: torch.float32\n[dtype of x] not answered yet: replace the ...\n"})
    leaks = find_leaks(nb, _answers(nb, {8: ["float32"]}))
    assert [leak.message() for leak in leaks] == [
        "answer leak: the answer 'float32' of the exercise at cell 7 is printed by its self-check cell 8 before "
        "the verdict"
    ]
    nb = _executed({8: "[dtype of x] right: float32\nfloat32 is the default\n"})
    assert (
        find_leaks(nb, _answers(nb, {8: ["float32"]})) == []
    )  # answered: the explanation follows the verdict


def test_a_self_check_run_unanswered_prints_nothing_but_its_verdict():
    nb = _executed({8: "[dtype of x] not answered yet: replace the ...\npacked: [(8, 4)]\n"})
    assert [(leak.cell, leak.term, leak.where) for leak in find_leaks(nb, {})] == [
        (8, "packed: [(8, 4)]", "unanswered")
    ]
    nb = _executed({8: "[dtype of x] not answered yet: replace the ...\n"})
    assert find_leaks(nb, {}) == []
    nb = _executed({8: "  (first print)\n[dtype of x] not answered yet: replace the ...\n"})
    assert find_leaks(nb, {}) == []  # the experiment's own output, before the verdict: read for terms only


def test_an_exercise_marked_answer_shown_is_not_read():
    nb = _executed({})
    assert "answer_shown" in nb.cells[16].metadata
    assert find_leaks(nb, _answers(nb, {17: ["bias"]})) == []
    del nb.cells[16].metadata["answer_shown"]
    assert [leak.term for leak in find_leaks(nb, _answers(nb, {17: ["bias"]}))] == ["bias"]


def test_rich_outputs_are_read_as_text_but_pictures_are_not():
    nb = _executed({})
    nb.cells[5].outputs = [
        new_output("display_data", data={"image/svg+xml": "<text>float32</text>"}),
        new_output("execute_result", data={"text/plain": "'float32'"}, execution_count=1),
    ]
    assert [leak.where for leak in find_leaks(nb, _answers(nb, {8: ["float32"]}))] == ["output"]
    nb.cells[5].outputs = nb.cells[5].outputs[:1]
    assert find_leaks(nb, _answers(nb, {8: ["float32"]})) == []


def test_a_term_counts_only_standing_alone():
    assert appears("Random", "uses random.Random here")
    assert not appears("Random", "a RandomSampler")
    assert not appears("weight", "weights and weight_decay")
    assert appears("features.1", "box features.1 saved most")
    assert not appears("features.1", "features.10")


def test_answer_terms_are_strings_and_names_never_numbers():
    assert answer_terms([torch.float32, "ab", "abc", 3, 2.5, True, None]) == ["float32", "abc"]
    assert answer_terms({"features.0": 1.0, "classifier.1": "bias"}) == [
        "bias"
    ]  # keys are the prompt's items
    assert answer_terms(torch.nn.Linear) == ["Linear"] and answer_terms(len) == ["len"]
    assert answer_terms(torch.device("cpu")) == ["cpu"]
    assert answer_terms(torch.ones(3)) == []


def test_checks_record_nothing_outside_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    answers = tmp_path / "answers.jsonl"
    monkeypatch.setenv(exercises.ANSWERS_FILE, str(answers))
    monkeypatch.setattr(
        "IPython.get_ipython", lambda: None
    )  # another test in this process may have made a shell
    exercises.check("outside IPython", ..., "float32", why="no shell: nothing to record")
    assert not answers.exists() and read_answers(answers) == {}
    assert execute.ANSWERS_FILE == exercises.ANSWERS_FILE


def test_a_bad_answers_file_names_itself(tmp_path: Path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"cell": "k", "name": "n", "terms": ["abc"]}) + "\n")
    assert read_answers(answers) == {"k": {"abc"}}
    answers.write_text(answers.read_text() + '{"cell": "k", "na')  # a kernel killed mid-line
    with pytest.raises(ValueError, match=f"^{answers}: line 2 is not an answer record$"):
        read_answers(answers)


@pytest.mark.slow
def test_labs_run_answer_leaks_fails_the_leaking_lesson(tmp_path: Path):
    result = labs(
        "run",
        str(LESSON.parent),
        "--smoke",
        "--device",
        "cpu",
        "--answer-leaks",
        "--report",
        str(tmp_path / "leaks"),
    )
    assert result.returncode == 1, result.stdout
    error = json.loads((tmp_path / "leaks" / "report.json").read_text())["notebooks"][0]["error"]
    assert error.split("; ") == [
        "answer leak: the answer 'float32' of the exercise at cell 7 is in the output of cell 5, before the prediction",
        "answer leak: the answer 'Linear' of the exercise at cell 10 is in the markdown of cell 9, before the prediction",
    ]
    plain = labs("run", str(LESSON.parent), "--smoke", "--device", "cpu", "--report", str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.stdout
