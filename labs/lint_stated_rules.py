"""`labs lint`: every rule a lab's prompt states is enforced, or leaves the prompt.

A prompt that says "leave `x` unchanged", "use only calls to `f`" or "it must be iterative" promises the
student a rule the grade keeps. Each such sentence (found by its wording: must, never, do not, only,
leave, unchanged, in place, iterative ...) in the markdown before an exercise's solution cell, or in the
docstrings of that cell, is matched against ``<chapter>/probes/<lab>.rules.toml``, which says how it is
enforced, per exercise, phrase by phrase:

    [numerical_gradient]
    "leave `x` unchanged" = "contract"             # the probe keeps its contracts (inputs, global state)
    "use only calls to `f`" = "forbid"             # the probe declares forbid=(...)
    "must be **iterative**" = "iterative"           # the probe declares iterative=True
    "x.grad" = "probe: _nan_seen"                   # a function of the probe file observes it
    "no `eval`" = "vetting"                         # the grader refuses such code before it runs

Sentences before the first exercise's prompt (the lab's title cell and those above it) belong to the
table ``[lab]``.

The declarations are checked against the probe file (its ``@probe`` arguments and functions), and an
entry whose phrase no longer occurs in its exercise's rule sentences is reported as stale.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import tomllib
from nbformat import NotebookNode

from graders.coursedir import nbgrader_meta, probes_file
from graders.grader.cells import exercise_tests
from labs.lint_rules import Problem

RULE_WORDING = re.compile(
    r"\b(must|never|do not|don't|may not|only|leave|left|unchanged|in[ -]place|iterative|"
    r"as (?:you )?found|as (?:it was|they were)|not modify)\b",
    re.IGNORECASE,
)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(])|\n\s*\n|\n\s*[-*] ")
DEFINED = re.compile(r"^\s*def (\w+)\(", re.MULTILINE)  # also in source the probes ship to ranks as text
KINDS = ("contract", "forbid", "iterative", "probe:", "vetting", "not a rule:")
TITLE_CELL = 2  # lint_rules.title_after_setup: the lab's title and its introduction
LAB = "lab"  # the table of sentences that come before every exercise: the title cell and above


@dataclass(frozen=True)
class Statement:
    """One sentence of an exercise's prompt that states a rule, and the cell it is in."""

    exercise: str
    cell: int
    text: str


@dataclass(frozen=True)
class ProbeFacts:
    """What a probe file declares: per test grade_id its ``@probe`` keywords, and its function names."""

    keywords: dict[str, dict[str, ast.expr]]
    functions: set[str]


def rules_file(lab: Path) -> Path:
    """Where a lab's stated rules are mapped to their enforcement: next to its probes."""
    return probes_file(lab).with_suffix(".rules.toml")


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_END.split(text) if s and s.strip()]


def _docstrings(source: str) -> str:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    return "\n\n".join(
        doc
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and (doc := ast.get_docstring(node))
    )


def statements(nb: NotebookNode) -> list[Statement]:
    """The rule sentences of each exercise: the markdown since the previous exercise's cells, and the
    docstrings of its solution cell."""
    found, pending = [], []
    for index, cell in enumerate(nb.cells):
        meta = nbgrader_meta(cell)
        if cell.cell_type == "markdown" and index <= TITLE_CELL:
            found += [Statement(LAB, index, s) for s in _sentences(cell.source) if RULE_WORDING.search(s)]
        elif cell.cell_type == "markdown":
            pending.append((index, cell.source))
        elif cell.cell_type == "code" and meta.get("solution"):
            for at, text in [*pending, (index, _docstrings(cell.source))]:
                found += [
                    Statement(meta["grade_id"], at, s) for s in _sentences(text) if RULE_WORDING.search(s)
                ]
            pending = []
        elif cell.cell_type == "code" and meta.get("grade"):
            pending = []
    return found


def probe_facts(probes: Path) -> ProbeFacts:
    """The ``@probe("test_x", forbid=..., ...)`` keywords per test grade_id, and the names of the functions the
    file defines (in its code, or in the source it ships to other processes as text)."""
    try:
        tree = ast.parse(probes.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return ProbeFacts({}, set())  # labs/lint.py reports a missing or unparsable probe file
    keywords: dict[str, dict[str, ast.expr]] = {}
    functions = set(DEFINED.findall(probes.read_text(encoding="utf-8")))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and getattr(deco.func, "id", "") == "probe"
                    and deco.args
                    and isinstance(deco.args[0], ast.Constant)
                    and isinstance(deco.args[0].value, str)
                ):
                    keywords[deco.args[0].value] = {k.arg: k.value for k in deco.keywords if k.arg}
    return ProbeFacts(keywords, functions)


def _declared(kind: str, tests: list[str], facts: ProbeFacts) -> str | None:
    """Why ``kind`` is not what the exercise's probes declare, or None when it is."""
    probes = [facts.keywords[t] for t in tests if t in facts.keywords]
    if kind == "contract" and not any(_flag(p, "contracts", default=True) for p in probes):
        return "its probes turn contracts off (contracts=False)"
    if kind == "forbid" and not any("forbid" in p for p in probes):
        return "no probe of the exercise declares forbid=(...)"
    if kind == "iterative" and not any(_flag(p, "iterative", default=False) for p in probes):
        return "no probe of the exercise declares iterative=True"
    if kind.startswith("probe:") and kind.removeprefix("probe:").strip() not in facts.functions:
        return f"the probe file defines no function {kind.removeprefix('probe:').strip()!r}"
    if not kind.startswith(KINDS):
        return f"unknown kind (one of: {', '.join(KINDS)})"
    return None


def _flag(keywords: dict[str, ast.expr], name: str, default: bool) -> bool:
    """Whether a ``@probe`` keyword is on: ``default`` when absent, off only when written ``False``."""
    node = keywords.get(name)
    return default if node is None else not (isinstance(node, ast.Constant) and node.value is False)


def _load(path: Path) -> dict[str, dict[str, str]] | str:
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError:
        return {}
    except tomllib.TOMLDecodeError as err:
        return f"not valid TOML: {err}"
    if not all(isinstance(v, dict) and all(isinstance(x, str) for x in v.values()) for v in table.values()):
        return 'each exercise is a table of "phrase" = "kind" strings'
    return table


def stated_rules_enforced(path: Path, nb: NotebookNode) -> list[Problem]:
    """Each rule sentence of each exercise is covered by a phrase of the lab's rules file, whose kind the
    probe file declares; no phrase of the file is stale."""
    where, table = rules_file(path), _load(rules_file(path))
    if isinstance(table, str):
        return [Problem(where, None, table)]
    tests, facts, problems = exercise_tests(nb), probe_facts(probes_file(path)), []
    said = statements(nb)
    for st in said:
        entries = table.get(st.exercise, {})
        if not any(_normal(phrase) in _normal(st.text) for phrase in entries):
            problems.append(
                Problem(
                    path,
                    st.cell,
                    f"exercise {st.exercise!r} states a rule that {where.name} does "
                    f"not map to its enforcement: {st.text[:120]!r}",
                )
            )
    for exercise, entries in table.items():
        texts = [_normal(s.text) for s in said if s.exercise == exercise]
        for phrase, kind in entries.items():
            if not any(_normal(phrase) in text for text in texts):
                problems.append(
                    Problem(
                        where,
                        None,
                        f"[{exercise}] {phrase!r}: no rule sentence of the exercise "
                        "says this any more (remove the entry)",
                    )
                )
            elif why := _declared(kind.strip(), tests.get(exercise, []), facts):
                problems.append(Problem(where, None, f"[{exercise}] {phrase!r} = {kind!r}: {why}"))
    return problems
