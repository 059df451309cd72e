"""`labs lint`'s copy rule: a lab solution that the chapter's lessons or the lab's release already show.

Code is compared as Python tokens after ``ast.unparse`` (so comments, docstrings, quotes and
layout do not count). The measure is *coverage*: the fraction of the solution's tokens matched, in
order, by runs of at least ``MIN_RUN`` tokens of one shown cell (difflib). Short runs are chance
(``) ,``, ``= torch .``); long runs are copying. It is taken twice: verbatim, and with every local
name replaced by ``_`` (a copy with renamed variables). Calibrated on the course of 2026-11-30, whose
known copies scored 0.51-0.79 verbatim and 0.57-0.91 renamed, against at most 0.43 and 0.60 for
solutions written afresh.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import io
import textwrap
import tokenize
from dataclasses import dataclass

from graders.coursedir import solution_bodies

Tokens = list[str]

MIN_RUN = 3
MIN_SOLUTION_TOKENS = 8
VERBATIM_LIMIT = 0.5
RENAMED_LIMIT = 0.65
GLOBAL_NAMES = frozenset(dir(builtins)) | {
    "torch",
    "nn",
    "F",
    "np",
    "math",
    "dist",
    "random",
    "itertools",
    "functools",
    "onnxruntime",
    "ort",
    "labutils",
}


@dataclass(frozen=True)
class Shown:
    """A piece of code a student can read: a lesson cell or a cell of the lab's release."""

    where: str
    tokens: Tokens
    renamed: Tokens


@dataclass(frozen=True)
class Copy:
    """The shown code that covers most of a solution, and by how much."""

    where: str
    verbatim: float
    renamed: float

    def __str__(self) -> str:
        return (
            f"solution is a near-copy of {self.where} ({self.verbatim:.0%} of its tokens verbatim, "
            f"{self.renamed:.0%} with names ignored; limits {VERBATIM_LIMIT:.0%}/{RENAMED_LIMIT:.0%})"
        )


class _LocalNames(ast.NodeTransformer):
    """Replace every name that is not a builtin or a well-known module by ``_``."""

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = node.id if node.id in GLOBAL_NAMES else "_"
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg, node.annotation = "_", None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name, node.returns = "_", None
        self.generic_visit(node)
        return node


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]  # every node with a body
    return tree


def _parse(source: str) -> ast.AST | None:
    """The code of a cell, IPython magics and shell lines left out; None if it is not Python."""
    lines = [
        line for line in textwrap.dedent(source).splitlines() if not line.lstrip().startswith(("%", "!"))
    ]
    try:
        return _without_docstrings(ast.parse("\n".join(lines)))
    except SyntaxError:
        return None


def _tokens(tree: ast.AST) -> Tokens:
    text = ast.unparse(tree)
    return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.string.strip()]


def _raw_tokens(source: str) -> Tokens | None:
    """Tokens of text that is not a whole Python module (a fragment), comments left out."""
    found: Tokens = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(textwrap.dedent(source)).readline):
            if t.string.strip() and t.type != tokenize.COMMENT:
                found.append(t.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # what was read up to the break still counts
    return found or None


def normalised(source: str) -> tuple[Tokens, Tokens] | None:
    """``(verbatim tokens, tokens with local names replaced)`` of a piece of code, or None if empty.

    Code that does not parse (a fragment) is compared as raw tokens, both ways: never skipped.
    """
    tree = _parse(source)
    if tree is None:
        raw = _raw_tokens(source)
        return (raw, raw) if raw else None
    verbatim = _tokens(tree)
    return verbatim, _tokens(_LocalNames().visit(tree))


def coverage(solution: Tokens, shown: Tokens) -> float:
    """Fraction of ``solution`` matched in order by runs of at least MIN_RUN tokens of ``shown``."""
    if not solution:
        return 0.0
    blocks = difflib.SequenceMatcher(None, solution, shown, autojunk=False).get_matching_blocks()
    return sum(b.size for b in blocks if b.size >= MIN_RUN) / len(solution)


def shown(where: str, source: str) -> Shown | None:
    """A shown cell, normalised; None if it holds no Python."""
    found = normalised(source)
    return Shown(where, *found) if found else None


def solution_code(cell_source: str) -> str:
    """The code between the solution markers of a solution cell, each region dedented on its own."""
    return "\n".join(textwrap.dedent(body) for body in solution_bodies(cell_source))


def nearest_copy(solution: str, candidates: list[Shown]) -> Copy | None:
    """The shown cell a solution copies (over either limit), or None if it copies none."""
    found = normalised(solution)
    if found is None or len(found[0]) < MIN_SOLUTION_TOKENS:
        return None
    verbatim, renamed = found
    scored = [Copy(c.where, coverage(verbatim, c.tokens), coverage(renamed, c.renamed)) for c in candidates]
    over = [c for c in scored if c.verbatim >= VERBATIM_LIMIT or c.renamed >= RENAMED_LIMIT]
    return max(over, key=lambda c: (c.verbatim, c.renamed), default=None)
