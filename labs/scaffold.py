"""`labs new`: a chapter, lesson or lab that already follows docs/authoring.md.

Cells are built with nbformat (cell builders below, also used by the test fixtures); every file
the scaffold writes passes `labs lint`, and its example exercise passes `labs check` (source full
marks, release zero, its wrong solutions lose), so an author starts from something that works
and replaces the examples.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat as nbf
from nbformat import NotebookNode

from graders.coursedir import labs_in, probes_file

META = {
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
}
PARAMETERS = 'DEVICE = "auto"  # auto | cpu | cuda\nSMOKE = False  # True: tiny sizes, for a fast CI run'
SETUP = "from labutils import setup\nDEVICE = setup(DEVICE, seed=0)"
CHAPTER_NAME = re.compile(r"^\d\d_[a-z][a-z0-9_]*$")
POINTS_PER_EXERCISE = 5


class ScaffoldError(ValueError):
    """A name the scaffold cannot use, or a file it would overwrite: one line for the user."""


def notebook(*cells: NotebookNode, parameters: bool = True) -> NotebookNode:
    """A notebook with the parameters and setup cells first (unless ``parameters`` is False)."""
    nb = nbf.v4.new_notebook(metadata=META)
    head = [nbf.v4.new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]}), nbf.v4.new_code_cell(SETUP)]
    nb.cells = (head if parameters else []) + list(cells)
    return nb


def tagged(source: str, tag: str) -> NotebookNode:
    """A code cell carrying one tag (``exercise``, ``self-check``); a self-check's source starts collapsed."""
    metadata: dict = {"tags": [tag]}
    if tag == "self-check":
        metadata["jupyter"] = {"source_hidden": True}
    return nbf.v4.new_code_cell(source, metadata=metadata)


def solution_cell(grade_id: str, source: str) -> NotebookNode:
    """An nbgrader solution cell (``### BEGIN/END SOLUTION`` inside ``source``)."""
    meta = {
        "grade": False,
        "grade_id": grade_id,
        "locked": False,
        "schema_version": 3,
        "solution": True,
        "task": False,
    }
    return nbf.v4.new_code_cell(source, metadata={"nbgrader": meta})


def test_cell(grade_id: str, points: int, source: str) -> NotebookNode:
    """An nbgrader autograded, locked test cell worth ``points``."""
    meta = {
        "grade": True,
        "grade_id": grade_id,
        "locked": True,
        "points": points,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    return nbf.v4.new_code_cell(source, metadata={"nbgrader": meta})


def stable(nb: NotebookNode) -> NotebookNode:
    """The notebook with id-free cells (nbformat 4.4), so regenerating it gives the same bytes."""
    for cell in nb.cells:
        cell.pop("id", None)
    nb.nbformat_minor = 4
    return nb


def write(nb: NotebookNode, path: Path) -> None:
    """Write a notebook with stable cells, creating folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nbf.write(stable(nb), path)


# --- the examples an author replaces -------------------------------------------------------------


def example_solution(name: str) -> str:
    return (
        f'def {name}(x):\n    """Example exercise (replace it): x scaled by 2, as a new tensor."""\n'
        f"    ### BEGIN SOLUTION\n    return x * 2\n    ### END SOLUTION"
    )


def example_tests(name: str) -> str:
    return (
        f"got = {name}(torch.tensor([1.0, -2.0]))\n"
        f'assert torch.equal(got, torch.tensor([2.0, -4.0])), f"expected [2., -4.], got {{got}}"\n'
        f"### BEGIN HIDDEN TESTS\ng = torch.Generator().manual_seed(0)\nx = torch.randn(7, generator=g)\n"
        f"torch.testing.assert_close({name}(x), x + x)\n### END HIDDEN TESTS"
    )


def example_probe(name: str) -> str:
    return (
        f'@probe("test_{name}", clauses={{"what {name} returns": "outcome(ns[", "x left as it was": "contracts",\n'
        f'                                "vectors of any length, none included": "draw.sizes(0, 9"}})\n'
        f"def {name}(ns: Namespace, draw: Draw) -> list:\n"
        f'    """{name} on random vectors, and its input left as it was"""\n'
        f"    cases = []\n    for n in draw.sizes(0, 9, 12):\n        x = draw.randn(n)\n"
        f'        cases.append([outcome(ns["{name}"], x), x.clone()])\n    return cases\n'
    )


def example_wrong_solutions(name: str) -> dict[str, str]:
    """Three plausible mistakes for the example exercise: slug -> the solution cell's replacement."""
    wrong = {"adds_two": "x + 2", "squares": "x * x", "in_place": "x.mul_(2)"}
    return {
        slug: f'def {name}(x):\n    """Wrong (scaffold example): {slug.replace("_", " ")}."""\n    return {body}\n'
        for slug, body in wrong.items()
    }


PROBES_HEADER = '''"""Probes of {lab}: each drives one exercise on inputs drawn for this grading run (docs/authoring.md)."""

from graders.inside.probing import Draw, Namespace, outcome, probe
'''


def lesson_notebook(title: str) -> NotebookNode:
    """A lesson page: question, experiment, rule, and three predict-then-run exercises."""
    exercises = []
    for k, (question, experiment, why) in enumerate(
        [
            ("the shape of `x.t()`", "tuple(x.t().shape)", "t() swaps the two dimensions"),
            (
                "whether `x.t()` shares `x`'s storage",
                "x.t().untyped_storage().data_ptr() == x.untyped_storage().data_ptr()",
                "t() is a view",
            ),
            ("`x.sum().item()`", "x.sum().item()", "sum() adds every element arange wrote"),
        ],
        start=1,
    ):
        exercises += [
            nbf.v4.new_markdown_cell(f"**Exercise {k}.** Predict {question}, then run the check."),
            tagged("prediction = ...", "exercise"),
            tagged(f"exercises.check({question!r}, prediction, {experiment}, why={why!r})", "self-check"),
        ]
    return notebook(
        nbf.v4.new_markdown_cell(
            f"# {title}\n\nThe question this page answers, in one sentence. "
            "(Full mode: seconds on a laptop CPU.)"
        ),
        nbf.v4.new_code_cell("import torch\n\nfrom labutils import exercises"),
        nbf.v4.new_markdown_cell("A small experiment:"),
        nbf.v4.new_code_cell(
            "x = torch.arange(6.0).reshape(2, 3)\nassert x.t().shape == (3, 2)\nprint(x.t())"
        ),
        nbf.v4.new_markdown_cell("**Rule:** what the experiment shows, stated once."),
        *exercises,
    )


def lab_notebook(title: str, exercises: list[str]) -> NotebookNode:
    """A lab with one example exercise (solution + visible and hidden tests) per name."""
    points = POINTS_PER_EXERCISE * len(exercises)
    cells = [
        nbf.v4.new_markdown_cell(
            f"# {title}\n\n{len(exercises)} exercises, {points} points. Replace each "
            "`raise NotImplementedError()` with your code and run the test cell below it."
        ),
        nbf.v4.new_code_cell("import torch"),
    ]
    for k, name in enumerate(exercises, start=1):
        cells += [
            nbf.v4.new_markdown_cell(
                f"## Exercise {k}: `{name}` ({POINTS_PER_EXERCISE} points)\n\n"
                "What to write, and which cases the hidden tests try."
            ),
            solution_cell(name, example_solution(name)),
            test_cell(f"test_{name}", POINTS_PER_EXERCISE, example_tests(name)),
        ]
    return notebook(*cells)


@dataclass
class Scaffold:
    """The files ``labs new`` writes, path -> text, checked before anything is written."""

    files: dict[Path, str] = field(default_factory=dict)

    def add_notebook(self, path: Path, nb: NotebookNode) -> None:
        self.files[path] = nbf.writes(stable(nb)) + "\n"

    def write(self) -> list[Path]:
        clashes = [p for p in self.files if p.exists()]
        if clashes:
            raise ScaffoldError(f"{clashes[0]}: already exists (labs new never overwrites)")
        for path, text in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return sorted(self.files)


def _identifier(name: str, what: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name) or name != name.lower():
        raise ScaffoldError(f"{name!r}: a {what} name must be a lower-case Python identifier")
    return name


def _grade_ids(chapter_dir: Path) -> set[str]:
    found = set()
    for path in labs_in(chapter_dir):
        found |= {c.metadata.get("nbgrader", {}).get("grade_id") for c in nbf.read(path, as_version=4).cells}
    return found - {None}


def lab_files(chapter_dir: Path, wrong_dir: Path, name: str, exercises: list[str]) -> Scaffold:
    """Lab notebook, probe file and wrong solutions for a lab ``lab_<name>`` in ``chapter_dir``."""
    name = _identifier(name, "lab")
    exercises = [_identifier(e, "exercise") for e in exercises or ["double"]]
    if len(set(exercises)) != len(exercises):
        raise ScaffoldError(f"exercise names repeat: {', '.join(exercises)}")
    taken = _grade_ids(chapter_dir) & ({*exercises} | {f"test_{e}" for e in exercises})
    if taken:
        raise ScaffoldError(
            f"{chapter_dir}: grade_id {sorted(taken)[0]!r} is taken by another lab of the chapter "
            "(name the exercises with --exercise)"
        )
    lab = f"lab_{name}"
    scaffold = Scaffold()
    scaffold.add_notebook(
        chapter_dir / f"{lab}.ipynb", lab_notebook(f"Lab: {name.replace('_', ' ')}", exercises)
    )
    scaffold.files[probes_file(chapter_dir / f"{lab}.ipynb")] = PROBES_HEADER.format(lab=lab) + "".join(
        f"\n\n{example_probe(e)}" for e in exercises
    )
    for exercise in exercises:
        for slug, text in example_wrong_solutions(exercise).items():
            scaffold.files[wrong_dir / chapter_dir.name / f"{exercise}__{slug}.py"] = text
    return scaffold


def chapter_files(course_dir: Path, wrong_dir: Path, chapter: str, exercises: list[str]) -> Scaffold:
    """A new chapter ``NN_topic``: one lesson and one lab (``lab_<topic>``)."""
    if not CHAPTER_NAME.match(chapter):
        raise ScaffoldError(f"{chapter!r}: a chapter is named NN_topic (two digits, then lower-case words)")
    folder = course_dir / chapter
    if folder.exists():
        raise ScaffoldError(f"{folder}: already exists (labs new never overwrites)")
    topic = chapter[3:]
    scaffold = lab_files(folder, wrong_dir, topic, exercises)
    scaffold.add_notebook(
        folder / "1_first_lesson.ipynb", lesson_notebook(f"1. {topic.replace('_', ' ').capitalize()}")
    )
    return scaffold
