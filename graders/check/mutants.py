"""Mutants of a reference solution: each one small change to the code between an exercise's
``### BEGIN SOLUTION`` and ``### END SOLUTION`` (and to the defaults of the exercise's own signature).

A mutant is a whole solution cell, as a student could hand it in, differing from the reference in one
place. Its id names the exercise, the operator, where (``region.line.col``: the solution region, 1 for
the first, and the line within it counted from its BEGIN marker; region 0 is the signature, lines
counted from the cell's first) and the variant, so an edit elsewhere in the cell keeps it. The order is
the source's, then :data:`graders.check.mutant_operators.OPERATORS`', then each operator's variants.

Each change is made on the syntax tree and spliced into the text where the changed node stood, so a
mutant keeps the reference's layout and comments; it is kept only when the spliced text parses to
exactly the changed tree. The operators are :mod:`graders.check.mutant_operators`'; one more lives here, as
it changes a whole region: its code wrapped in ``torch.no_grad()``.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass

from graders.check.mutant_operators import OPERATORS, Replacement
from graders.coursedir import SOLUTION_BEGIN, SOLUTION_END
from graders.grader.parsing import parse, parsed


@dataclass(frozen=True)
class Mutant:
    """One change to an exercise's solution cell: ``source`` is the whole cell with it."""

    exercise: str
    operator: str
    location: str
    variant: str
    source: str

    @property
    def id(self) -> str:
        """exercise/operator/location/variant: stable while the region's code stays as it is."""
        return f"{self.exercise}/{self.operator}/{self.location}/{self.variant}"


# --- where: the solution regions, the signature's defaults ----------------------------------------------


def regions(source: str) -> list[tuple[int, int]]:
    """(BEGIN line, END line) of each solution region of a cell, 1-based, in order."""
    found, begin = [], None
    for number, line in enumerate(source.splitlines(), start=1):
        if line.strip().startswith(SOLUTION_BEGIN):
            begin = number
        elif line.strip().startswith(SOLUTION_END) and begin is not None:
            found.append((begin, number))
            begin = None
    return found


Located = ast.stmt | ast.expr  # the nodes that have lines and columns


def _end(node: Located) -> int:
    """The last line of ``node`` (parsed nodes always have one)."""
    return node.end_lineno if node.end_lineno is not None else node.lineno


def _region_of(node: ast.AST, spans: list[tuple[int, int]]) -> int:
    """1 + the index of the region that holds ``node`` entirely, 0 when none does (the module itself,
    which has no lines: the parent of a region written at the cell's top level)."""
    lineno: int | None = getattr(node, "lineno", None)  # statements, expressions, handlers, arguments...
    if lineno is None:
        return 0
    last: int = getattr(node, "end_lineno", None) or lineno
    return next((i + 1 for i, (begin, end) in enumerate(spans) if begin < lineno and last < end), 0)


def signature_defaults(tree: ast.AST, spans: list[tuple[int, int]]) -> list[ast.expr]:
    """Default values of the functions outside every region whose body holds a region (the exercise's own)."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and _region_of(node, spans) == 0
            and any(node.lineno < begin < _end(node) for begin, _ in spans)
        ):
            found += [d for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None]
    return found


# --- making a mutant: the change on the tree, then in the text ---------------------------------------------


class Cell:
    """A solution cell's text and tree, and where each node stands in both."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source.splitlines(keepends=True)
        self.tree = parse(source)
        self.spans = regions(source)
        self.parents: dict[int, tuple[ast.AST, str, int | None]] = {}
        for parent in ast.walk(self.tree):
            for name, value in ast.iter_fields(parent):
                for i, child in enumerate(value) if isinstance(value, list) else [(None, value)]:
                    if isinstance(child, ast.AST):
                        self.parents[id(child)] = (parent, name, i)

    def offset(self, line: int, col: int) -> int:
        """Character offset in the source of (1-based line, UTF-8 byte column), as ``ast`` counts them."""
        text = self.lines[line - 1] if line <= len(self.lines) else ""
        return sum(len(x) for x in self.lines[: line - 1]) + len(text.encode()[:col].decode(errors="replace"))

    def location(self, node: Located) -> str:
        """``region.line.col`` of ``node`` (region 0, lines from the cell's first: outside every region)."""
        region = _region_of(node, self.spans)
        first = self.spans[region - 1][0] if region else 0
        col = self.offset(node.lineno, node.col_offset) - self.offset(node.lineno, 0)
        return f"{region}.{node.lineno - first}.{col}"

    def expected(self, node: Located, replacement: Replacement) -> str:
        """``ast.dump`` of the tree with ``node`` replaced."""
        parent, name, i = self.parents[id(node)]
        old = getattr(parent, name)
        if i is None:
            setattr(parent, name, replacement)
        else:
            setattr(
                parent,
                name,
                old[:i] + (replacement if isinstance(replacement, list) else [replacement]) + old[i + 1 :],
            )
        try:
            return ast.dump(self.tree)
        finally:
            setattr(parent, name, old)

    def spliced(self, node: Located, text: str, whole_lines: bool = False) -> str:
        """The source with ``node``'s text replaced by ``text`` (``whole_lines``: the lines it spans)."""
        start = self.offset(node.lineno, 0 if whole_lines else node.col_offset)
        end = (
            self.offset(_end(node) + 1, 0)
            if whole_lines
            else self.offset(_end(node), node.end_col_offset or 0)
        )
        return self.source[:start] + text + self.source[end:]

    def texts(self, node: Located, replacement: Replacement) -> Iterator[str]:
        """Candidate spellings of the mutated cell, the plainest first."""
        indent = " " * (self.offset(node.lineno, node.col_offset) - self.offset(node.lineno, 0))
        if isinstance(replacement, list):  # a block's body in place of the block
            body = "".join(self.lines[replacement[0].lineno - 1 : replacement[-1].end_lineno])
            yield self.spliced(node, textwrap.indent(textwrap.dedent(body), indent), whole_lines=True)
            return
        text = ast.unparse(replacement)
        if isinstance(node, ast.stmt):
            text = textwrap.indent(text, indent)[len(indent) :]
        yield self.spliced(node, text)
        if isinstance(node, ast.expr):
            yield self.spliced(node, f"({text})")

    def mutated(self, node: Located, replacement: Replacement) -> str | None:
        """The cell with the change, or None when no spelling parses to exactly the changed tree."""
        want = self.expected(node, replacement)
        for text in self.texts(node, replacement):
            try:
                if ast.dump(parse(text)) == want:
                    return text
            except SyntaxError:
                continue
        return None


def _wrap_in_no_grad(cell: Cell, region: int) -> Mutant | None:
    """The whole region's code run under ``torch.no_grad()`` (one mutant per region)."""
    begin, end = cell.spans[region - 1]
    top = [
        n
        for n in ast.walk(cell.tree)
        if isinstance(n, ast.stmt)
        and _region_of(n, cell.spans) == region
        and _region_of(cell.parents[id(n)][0], cell.spans) != region
    ]
    if not top:
        return None
    first = cell.lines[top[0].lineno - 1]
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    body = "".join(cell.lines[top[0].lineno - 1 : top[-1].end_lineno])
    text = f"{indent}with torch.no_grad():\n" + textwrap.indent(body, "    ")
    start, stop = cell.offset(top[0].lineno, 0), cell.offset(_end(top[-1]) + 1, 0)
    source = cell.source[:start] + text + cell.source[stop:]
    if parsed(source) is None:
        return None
    return Mutant("", "grad_mode", f"{region}.{top[0].lineno - begin}.{len(indent)}", "add-no_grad", source)


def mutants_of(exercise: str, source: str) -> list[Mutant]:
    """Every mutant of one solution cell, in a fixed order, each id once, none equal to the source."""
    cell = Cell(source)
    defaults = {id(n) for d in signature_defaults(cell.tree, cell.spans) for n in ast.walk(d)}
    inside = [
        n
        for n in ast.walk(cell.tree)
        if isinstance(n, (ast.stmt, ast.expr))
        and n is not cell.tree
        and (_region_of(n, cell.spans) or id(n) in defaults)
    ]
    inside.sort(key=lambda n: (n.lineno, n.col_offset, -_end(n), -(n.end_col_offset or 0)))
    found: list[Mutant] = []
    for node in inside:
        for name, operator in OPERATORS:
            label = "default" if id(node) in defaults else name
            for variant, replacement, *target in operator(node):
                text = cell.mutated(target[0] if target else node, replacement)
                if text is not None and text != source:
                    found.append(Mutant(exercise, label, cell.location(node), variant, text))
    for region in range(1, len(cell.spans) + 1):
        wrapped = _wrap_in_no_grad(cell, region)
        found += (
            [Mutant(exercise, wrapped.operator, wrapped.location, wrapped.variant, wrapped.source)]
            if wrapped
            else []
        )
    return _unique(found)


def _unique(mutants: list[Mutant]) -> list[Mutant]:
    """The first of each id (a later one gets ``#2``, ``#3`` ...) and of each source."""
    seen_ids: dict[str, int] = {}
    seen_sources: set[str] = set()
    kept = []
    for mutant in mutants:
        if mutant.source in seen_sources:
            continue
        seen_sources.add(mutant.source)
        count = seen_ids[mutant.id] = seen_ids.get(mutant.id, 0) + 1
        kept.append(
            mutant
            if count == 1
            else Mutant(
                mutant.exercise, mutant.operator, mutant.location, f"{mutant.variant}#{count}", mutant.source
            )
        )
    return kept
