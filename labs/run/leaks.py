"""`labs run --answer-leaks`: no exercise's answer is on the page before the prediction.

While a lesson runs, each ``exercises.check`` / ``check_function`` appends the terms of its expected answer
(strings of 3+ characters and names: :func:`labutils.exercises.answer_terms`) to the file ``$LABS_ANSWERS``
names, with a key of the source of the self-check cell that ran it. After the run, each exercise cell (tagged
``exercise``) is read with its self-check's terms: none may appear in the markdown, or in the text outputs,
of the cells from the heading before the exercise up to it, nor in what its self-check cell prints before the
check's verdict; and a self-check cell run with its exercise unanswered (as the lessons are committed) prints
nothing after its verdict (a student who runs the check first would see it). An exercise whose cell metadata says
``"answer_shown": "<why>"`` is not read (docs/authoring.md, "Answer leaks", lists the known false positives).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from labutils.exercises import cell_key

EXERCISE_TAG, SELF_CHECK_TAG = "exercise", "self-check"
SHOWN_ANYWAY = "answer_shown"
HEADING = re.compile(r"^#{1,6}\s", re.M)
TEXT_OUTPUTS = ("text/plain", "text/markdown", "text/html", "text/latex")
VERDICT = re.compile(r"^\[.+?\] (?:not answered yet|right|not yet)\b", re.M)  # what exercises.check prints
NOT_ANSWERED = re.compile(r"^\[.+?\] not answered yet\b", re.M)


@dataclass(frozen=True)
class Leak:
    """An answer term of the exercise at ``exercise`` shown by cell ``cell`` (indices of the executed notebook)."""

    exercise: int
    cell: int
    term: str
    where: str  # "markdown", "output", "check" (its self-check's output before the verdict) or "unanswered"

    def message(self, source_index: Callable[[int], int] = lambda i: i) -> str:
        """One line; ``source_index`` maps the executed notebook's cell indices back to the source's."""
        if self.where == "unanswered":
            return (
                f"answer leak: self-check cell {source_index(self.cell)} prints {self.term!r} while the exercise "
                f"at cell {source_index(self.exercise)} is unanswered: show it once answered "
                "(if not exercises.unanswered(prediction): ...)"
            )
        if self.where == "check":
            return (
                f"answer leak: the answer {self.term!r} of the exercise at cell {source_index(self.exercise)} is "
                f"printed by its self-check cell {source_index(self.cell)} before the verdict"
            )
        return (
            f"answer leak: the answer {self.term!r} of the exercise at cell {source_index(self.exercise)} is "
            f"in the {self.where} of cell {source_index(self.cell)}, before the prediction"
        )


def read_answers(path: Path) -> dict[str, set[str]]:
    """A cell's key -> the terms of every answer it checked (nothing when the file is absent); ValueError
    naming the file and line when a line is not a record."""
    answers: dict[str, set[str]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return answers
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
            answers.setdefault(str(record["cell"]), set()).update(map(str, record["terms"]))
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{path}: line {number} is not an answer record") from None
    return answers


def _tags(cell: NotebookNode) -> list[str]:
    return cell.metadata.get("tags", [])


def shown_text(cell: NotebookNode, from_heading: bool = False) -> tuple[str, str]:
    """``(what a reader sees of the cell, "markdown" or "output")``: a markdown cell's text (from its last
    heading on, when ``from_heading``) or a code cell's text outputs (pictures are not read)."""
    if cell.cell_type == "markdown":
        text = cell.source
        if from_heading:
            starts = [m.start() for m in HEADING.finditer(text)]
            text = text[starts[-1] :] if starts else text
        return text, "markdown"
    if cell.cell_type != "code":
        return "", "output"
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif output.get("output_type") == "error":
            parts.append("\n".join(output.get("traceback", [])))
        else:
            data = output.get("data", {})
            parts += [
                "".join(data[kind]) if isinstance(data[kind], list) else str(data[kind])
                for kind in TEXT_OUTPUTS
                if kind in data
            ]
    return "\n".join(parts), "output"


def window(nb: NotebookNode, exercise: int) -> range:
    """The cells a reader has just read before the exercise: from the last markdown heading before it."""
    for i in range(exercise - 1, -1, -1):
        cell = nb.cells[i]
        if cell.cell_type == "markdown" and HEADING.search(cell.source):
            return range(i, exercise)
    return range(0, exercise)


def appears(term: str, text: str) -> bool:
    """``term`` stands in ``text`` on its own: not inside a longer name (``Random`` is not in ``RandomSampler``)."""
    before = r"(?<![\w])" if term[0].isalnum() or term[0] == "_" else ""
    after = r"(?![\w])" if term[-1].isalnum() or term[-1] == "_" else ""
    return re.search(before + re.escape(term) + after, text) is not None


def find_leaks(nb: NotebookNode, answers: dict[str, set[str]]) -> list[Leak]:
    """Every answer term that a cell between an exercise's heading and the exercise shows."""
    leaks = []
    for i, cell in enumerate(nb.cells):
        if EXERCISE_TAG not in _tags(cell) or SHOWN_ANYWAY in cell.metadata:
            continue
        check = nb.cells[i + 1] if i + 1 < len(nb.cells) else None
        if check is None or SELF_CHECK_TAG not in _tags(check):
            continue  # labs lint reports an exercise without its self-check
        terms = answers.get(cell_key(check.source), set())
        span = window(nb, i)
        for j in span:
            text, where = shown_text(nb.cells[j], from_heading=j == span.start)
            leaks += [Leak(i, j, term, where) for term in sorted(terms) if appears(term, text)]
        printed = shown_text(check)[0]
        leaks += [
            Leak(i, i + 1, term, "check") for term in sorted(terms) if appears(term, before_verdict(printed))
        ]
        leaks += [Leak(i, i + 1, line, "unanswered") for line in printed_while_unanswered(printed)[:1]]
    return leaks


def printed_while_unanswered(text: str) -> list[str]:
    """What a self-check cell printed after its "not answered yet" verdict: a student who runs the check before
    answering sees it (measurements, lists, errors that give the answer away). Nothing, when the cell shows it
    only once answered (``if not exercises.unanswered(prediction): print(...)``). What it printed before the
    verdict is read for the answer's terms instead (the experiment's own output may come first)."""
    verdict = NOT_ANSWERED.search(text)
    if not verdict:
        return []
    after = text[verdict.start() :]
    return [line.strip()[:80] for line in after.splitlines() if line.strip() and not VERDICT.match(line)]


def before_verdict(text: str) -> str:
    """What a self-check cell printed before the first verdict of ``exercises.check``."""
    verdict = VERDICT.search(text)
    return text[: verdict.start()] if verdict else text


def leaks_in(executed: Path, answers_file: Path) -> list[Leak]:
    """:func:`find_leaks` of an executed notebook and the answers its run recorded."""
    return find_leaks(nbformat.read(executed, as_version=4), read_answers(answers_file))
