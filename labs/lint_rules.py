"""The rules of docs/authoring.md that `labs lint` adds to labs/lint.py's: one small function per rule,
each ``(path, notebook) -> list[Problem]``."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from graders.coursedir import HIDDEN_BEGIN, HIDDEN_END, nbgrader_meta, probes_file
from labs.notebooks import PARAMETERS

HIDDEN_MARKERS = (HIDDEN_BEGIN, HIDDEN_END)
NBGRADER_KEYS = ("grade", "grade_id", "locked", "schema_version", "solution", "task")
SCHEMA_VERSION = 3
LESSON_NAME = re.compile(r"^\d+_\w+\.ipynb$")
MYTH, RULE = re.compile(r"\bMyth:"), re.compile(r"\bRule[:.]")
SELF_CHECK, CHECKS = "self-check", ("check", "check_function")
# A why= text explains the mechanism without the answer: no Python answer literal, no bare yes/no as a
# verdict, no number standing alone (digits inside a name such as float32 or conv2d are fine).
ANSWER_LITERALS = re.compile(r"\b(?:True|False|None)\b")
YES_NO = re.compile(r"(?:^|[.;:!?(]\s*)(?:yes|no)\b(?=\s*(?:[,.;:!?)]|$))", re.IGNORECASE | re.MULTILINE)
STANDALONE_NUMBER = re.compile(r"(?<![\w.])[-+]?\d(?:[\d_]|[.,](?=\d))*(?:e[-+]?\d+)?(?!\w)", re.IGNORECASE)


@dataclass(frozen=True)
class Problem:
    """One convention a notebook breaks; ``cell`` is the 0-based cell index or None for the file."""

    path: Path
    cell: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.cell}" if self.cell is not None else f"{self.path}"
        return f"{where}: {self.message}"


def _graded_code_cells(nb: NotebookNode) -> list[tuple[int, NotebookNode]]:
    return [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and nbgrader_meta(c).get("grade")]


def only_documented_parameters(path: Path, nb: NotebookNode) -> list[Problem]:
    """The parameters cell holds DEVICE and SMOKE and nothing else (papermill injects only those)."""
    if not nb.cells or nb.cells[0].cell_type != "code":
        return []  # labs/lint.py reports the missing parameters cell
    extra = sorted(assigned_names(nb.cells[0].source) - set(PARAMETERS))
    if not extra:
        return []
    return [
        Problem(
            path,
            0,
            f"parameters cell must hold only {' and '.join(PARAMETERS)} "
            f"(found {', '.join(extra)}: move them below cell 1)",
        )
    ]


def assigned_names(source: str) -> set[str]:
    """Names a cell assigns at any depth (empty when it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {
        t.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }


def _setup_calls(source: str) -> list[ast.Call]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == "setup"
    ]


def setup_seeds(path: Path, nb: NotebookNode) -> list[Problem]:
    """Cell 1 resolves the device and seeds everything: ``DEVICE = setup(DEVICE, seed=0)``."""
    if len(nb.cells) < 2:
        return [Problem(path, None, "cell 1 must be `DEVICE = setup(DEVICE, seed=0)` (from labutils)")]
    calls = _setup_calls(nb.cells[1].source) if nb.cells[1].cell_type == "code" else []
    if not calls:
        return [Problem(path, 1, "cell 1 must be `DEVICE = setup(DEVICE, seed=0)` (from labutils)")]
    if not any(k.arg == "seed" for call in calls for k in call.keywords):
        return [Problem(path, 1, "setup(DEVICE) without a seed: write `setup(DEVICE, seed=0)`")]
    return []


def test_cells_locked(path: Path, nb: NotebookNode) -> list[Problem]:
    """A graded test cell is ``locked: true``: nbgrader restores it, and students cannot edit it."""
    return [
        Problem(
            path,
            i,
            f'test cell {nbgrader_meta(c).get("grade_id")!r} must be locked (nbgrader "locked": true)',
        )
        for i, c in _graded_code_cells(nb)
        if not nbgrader_meta(c).get("locked")
    ]


def test_cells_hidden(path: Path, nb: NotebookNode) -> list[Problem]:
    """Each graded test cell ends with a ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` block."""
    return [
        Problem(path, i, f"test cell {nbgrader_meta(c).get('grade_id')!r} lacks {missing[0]!r}")
        for i, c in _graded_code_cells(nb)
        if (missing := [m for m in HIDDEN_MARKERS if m not in c.source])
    ]


def nbgrader_metadata_complete(path: Path, nb: NotebookNode) -> list[Problem]:
    """Every nbgrader cell carries the documented keys, ``schema_version`` 3 included."""
    problems = []
    for i, cell in enumerate(nb.cells):
        meta = nbgrader_meta(cell)
        if not meta:
            continue
        absent = [k for k in NBGRADER_KEYS if k not in meta]
        if absent:
            problems.append(
                Problem(path, i, f"nbgrader metadata of {meta.get('grade_id')!r} lacks {', '.join(absent)}")
            )
        elif meta["schema_version"] != SCHEMA_VERSION:
            problems.append(
                Problem(
                    path,
                    i,
                    f"nbgrader schema_version must be {SCHEMA_VERSION}, got {meta['schema_version']!r}",
                )
            )
    return problems


def lesson_numbered(path: Path, nb: NotebookNode) -> list[Problem]:
    """Lessons are named in reading order: ``1_first_lesson.ipynb``, ``2_...``."""
    if LESSON_NAME.match(path.name):
        return []
    return [
        Problem(
            path, None, f"a lesson's file name starts with its number: N_{path.stem}.ipynb (1_, 2_, 3_ ...)"
        )
    ]


def exercise_documented(path: Path, nb: NotebookNode) -> list[Problem]:
    """An exercise is a function or class with a docstring giving its signature, in its solution cell
    (every public one the cell defines)."""
    problems = []
    for i, cell in enumerate(nb.cells):
        if not (cell.cell_type == "code" and nbgrader_meta(cell).get("solution")):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        defined = [
            n
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and not n.name.startswith("_")
        ]  # private helpers (a fake kernel's `_`) need none
        if not defined or not all(ast.get_docstring(n) for n in defined):
            problems.append(
                Problem(
                    path,
                    i,
                    f"solution cell {nbgrader_meta(cell).get('grade_id')!r} must define a "
                    "function or class with a docstring giving its signature",
                )
            )
    return problems


def title_after_setup(path: Path, nb: NotebookNode) -> list[Problem]:
    """Cell 2, after the parameters and setup cells, is a markdown title (``# ...``)."""
    if (
        len(nb.cells) > 2
        and nb.cells[2].cell_type == "markdown"
        and nb.cells[2].source.lstrip().startswith("# ")
    ):
        return []
    return [Problem(path, 2 if len(nb.cells) > 2 else None, "cell 2 must be the markdown title (`# ...`)")]


def _myth_positions(nb: NotebookNode) -> list[tuple[int, int]]:
    return [
        (i, m.start())
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown"
        for m in MYTH.finditer(c.source)
    ]


def _refuted(nb: NotebookNode, cell: int, offset: int) -> bool:
    """A code cell (the experiment) after the myth, then a "Rule:" after that cell."""
    ran = False
    for i in range(cell, len(nb.cells)):
        c = nb.cells[i]
        if c.cell_type == "code" and i > cell:
            ran = ran or bool(c.source.strip())
        elif c.cell_type == "markdown" and ran and RULE.search(c.source, offset if i == cell else 0):
            return True
    return False


def myths_refuted(path: Path, nb: NotebookNode) -> list[Problem]:
    """A "Myth:" is followed by an experiment (a code cell), then "Rule:" with the correct statement.

    Whether the experiment asserts its outcome is the reviewers' call: a timing cannot be asserted.
    """
    return [
        Problem(path, i, "a Myth: needs an experiment (a code cell) after it, then a Rule: cell")
        for i, offset in _myth_positions(nb)
        if not _refuted(nb, i, offset)
    ]


def _probe_functions(probes: Path) -> list[ast.FunctionDef]:
    try:
        tree = ast.parse(probes.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return []  # labs/lint.py reports a missing or unparsable probe file
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef)
        and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "probe" for d in n.decorator_list)
    ]


def probes_documented(path: Path, nb: NotebookNode) -> list[Problem]:
    """Each probe has a docstring whose first paragraph names the check for students (their feedback shows it)."""
    probes = probes_file(path)
    return [
        Problem(
            probes,
            None,
            f"line {fn.lineno}: probe {fn.name} needs a docstring naming the check "
            "(students read its first paragraph in their feedback)",
        )
        for fn in _probe_functions(probes)
        if not ast.get_docstring(fn)
    ]


def _is_literal(node: ast.expr) -> bool:
    """A constant or a container of constants: what ast.literal_eval accepts (``-1``, ``(2, 3)``, ``{"a": True}``)."""
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _literal_names(tree: ast.Module) -> set[str]:
    """Names the cell binds to a literal anywhere (``expected = 3``, ``answer: tuple = (1, 2)``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_literal(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and node.value is not None and _is_literal(node.value):
            names |= {node.target.id} if isinstance(node.target, ast.Name) else set()
    return names


def _check_calls(tree: ast.Module) -> list[ast.Call]:
    """Calls of ``exercises.check``/``check_function`` (or the bare names, when imported)."""
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (
            (
                isinstance(n.func, ast.Attribute)
                and n.func.attr in CHECKS
                and getattr(n.func.value, "id", "") == "exercises"
            )
            or (isinstance(n.func, ast.Name) and n.func.id in CHECKS)
        )
    ]


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _expected_problems(call: ast.Call, literal_names: set[str]) -> list[str]:
    """Where the call's expected answer is typed into the cell instead of computed by its experiment."""
    if getattr(call.func, "attr", getattr(call.func, "id", "")) == "check_function":
        cases = _argument(call, 2, "cases")
        typed = [
            c
            for c in getattr(cases, "elts", [])
            if isinstance(c, ast.Tuple)
            and len(c.elts) == 2
            and (
                _is_literal(c.elts[1]) or (isinstance(c.elts[1], ast.Name) and c.elts[1].id in literal_names)
            )
        ]
        return (
            ["a check_function case's expected result is a literal: compute it with torch in the cell"]
            if typed
            else []
        )
    expected = _argument(call, 2, "expected")
    if expected is None:
        return []
    if _is_literal(expected):
        return [
            f"the expected answer {ast.unparse(expected)!r} is a literal: compute it by the cell's experiment"
        ]
    if isinstance(expected, ast.Name) and expected.id in literal_names:
        return [
            f"the expected answer {expected.id!r} is bound to a literal in the cell: compute it by the experiment"
        ]
    return []


def _why_problems(call: ast.Call) -> list[str]:
    """Where the ``why=`` text states the answer: a value interpolated, an answer word, a number."""
    why = _argument(call, 3, "why")
    if isinstance(why, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in why.values):
        return ["why= interpolates a value (an f-string): explain the mechanism, the check prints the result"]
    text = why.value if isinstance(why, ast.Constant) and isinstance(why.value, str) else None
    if text is None:
        return []
    problems = []
    if word := (ANSWER_LITERALS.search(text) or YES_NO.search(text)):
        problems.append(
            f"why= gives the answer away ({word.group().strip(' .;:!?(')!r}): explain the mechanism"
        )
    if number := STANDALONE_NUMBER.search(text):
        problems.append(f"why= gives the answer away (the number {number.group()!r}): explain the mechanism")
    return problems


def self_checks_hide_the_answer(path: Path, nb: NotebookNode) -> list[Problem]:
    """A lesson's self-check shows no answer before it runs (docs/authoring.md, "Exercises in a lesson").

    Its source is collapsed (``jupyter.source_hidden``), it calls ``exercises.check``/``check_function``,
    the expected answer is computed by the cell (not a literal, nor a name bound to one there), and the
    ``why=`` text explains the mechanism without stating the result (no True/False/None/yes/no answer,
    no standalone number). Whether the exercise needs the lesson's model is the reviewers' call.
    """
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or SELF_CHECK not in cell.metadata.get("tags", []):
            continue
        where = f"self-check cell {i}"
        if not cell.metadata.get("jupyter", {}).get("source_hidden"):
            problems.append(
                Problem(
                    path, i, f'{where} must be collapsed: cell metadata "jupyter": {{"source_hidden": true}}'
                )
            )
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            problems.append(Problem(path, i, f"{where} does not parse"))
            continue
        calls = _check_calls(tree)
        if not calls:
            problems.append(Problem(path, i, f"{where} calls no exercises.check or exercises.check_function"))
        literal_names = _literal_names(tree)
        for call in calls:
            problems += [
                Problem(path, i, f"{where}: {text}")
                for text in _expected_problems(call, literal_names) + _why_problems(call)
            ]
    return problems


MAX_LESSON_CELLS, MAX_LESSON_WORDS = 60, 2000


def markdown_words(nb: NotebookNode) -> int:
    """Words of a notebook's markdown cells, split on whitespace (what a word processor counts)."""
    return sum(len(cell.source.split()) for cell in nb.cells if cell.cell_type == "markdown")


def one_sitting(path: Path, nb: NotebookNode) -> list[Problem]:
    """A lesson is read in one sitting: at most MAX_LESSON_CELLS cells and MAX_LESSON_WORDS words of markdown."""
    problems = []
    if len(nb.cells) > MAX_LESSON_CELLS:
        problems.append(
            Problem(
                path,
                None,
                f"{len(nb.cells)} cells, more than one sitting's {MAX_LESSON_CELLS}: "
                "split the lesson along a seam, or move a deep dive out",
            )
        )
    words = markdown_words(nb)
    if words > MAX_LESSON_WORDS:
        problems.append(
            Problem(
                path,
                None,
                f"{words:,} words of markdown, more than one sitting's "
                f"{MAX_LESSON_WORDS:,}: split the lesson along a seam, or move a "
                "deep dive out",
            )
        )
    return problems


NOTEBOOK_RULES = (only_documented_parameters, setup_seeds, title_after_setup, nbgrader_metadata_complete)
LAB_RULES = (test_cells_locked, test_cells_hidden, exercise_documented, probes_documented)
LESSON_RULES = (lesson_numbered, myths_refuted, self_checks_hide_the_answer)
# The learner's rules (docs/authoring.md, "One sitting" and "Taught before"): off by default until the course
# passes them (`labs lint --learner-rules`); labs/lint.py adds taught_before to the labs' share.
LEARNER_LESSON_RULES = (one_sitting,)


def apply(rules: tuple, path: Path, nb: NotebookNode) -> list[Problem]:
    """Every problem the ``rules`` find in one notebook."""
    return [problem for rule in rules for problem in rule(path, nb)]
