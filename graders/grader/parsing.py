"""The one way the grader reads Python source: :func:`parse`, :func:`parsed` and, for a submission's
cells, :func:`read_cell`.

Grading runs in threads of one process, and CPython 3.11's ``ast.parse`` is not safe there: two threads
converting trees at once can raise ``SystemError`` ("AST constructor recursion depth mismatch"), which
reached a right answer as "grader error: SystemError" about once in a few hundred gradings. Every parse of
the grader's goes through one lock (parsing holds the GIL anyway, so the lock costs no throughput); a
parse that still meets the error (another library parsing outside the lock) is repeated, a few times,
since the error is the grader's and never the cell's. tests/test_imports.py checks that no other module of
``graders`` calls ``ast.parse`` itself.

A submission's cell is read once (:func:`read_cell`, cached): the vetting and the names a cell binds share
its tree. Before it is parsed, a cell is bounded in size and in braces, so no cell holds the lock long:
3.11 parses an f-string's fields in time quadratic in their number (one 64 KiB f-string of 21,800 fields:
0.5 s), and under :data:`MAX_BRACES` every 64 KiB cell parses in about 0.15 s at most.
"""

from __future__ import annotations

import ast
import functools
import threading
from dataclasses import dataclass

TRIES = 5
#: The largest solution cell the grader reads (bytes of UTF-8); the course's largest is under 2 KiB.
MAX_CELL_BYTES = 64 * 1024
#: The most ``{`` a solution cell may hold (f-string fields, dicts, sets); the course's cells hold under 40.
MAX_BRACES = 2048
_LOCK = threading.Lock()


def parse(source: str, tries: int = TRIES) -> ast.Module:
    """``ast.parse(source)``, one thread at a time; ``SyntaxError`` and the like propagate, as from it."""
    with _LOCK:
        for _ in range(tries - 1):
            try:
                return ast.parse(source)
            except SystemError:
                continue
        return ast.parse(source)


def parsed(source: str) -> ast.Module | None:
    """The tree of ``source``, or None when it is not Python, too deeply nested or too large to build."""
    try:
        return parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@dataclass(frozen=True)
class Unread:
    """Why a submission's cell was not parsed: the line, and what a student reads."""

    line: int
    what: str


def read_cell(source: str) -> ast.Module | Unread:
    """The tree of a submission's cell, or why there is none. A cell over :data:`MAX_CELL_BYTES` or
    :data:`MAX_BRACES` is never parsed nor kept. The tree is shared: nobody may change it."""
    if len(source) > MAX_CELL_BYTES or len(source.encode("utf-8", "surrogatepass")) > MAX_CELL_BYTES:
        size = len(source.encode("utf-8", "surrogatepass"))
        return Unread(1, f"a solution cell of {size} bytes (graded code may have at most {MAX_CELL_BYTES})")
    if source.count("{") > MAX_BRACES:
        line = source.count("\n", 0, _nth("{", source, MAX_BRACES + 1)) + 1
        return Unread(
            line,
            f"more than {MAX_BRACES} braces in one cell (f-string fields, dicts and sets: "
            "each costs the grader's parser more than the last)",
        )
    return _read_within_bounds(source)


def _nth(needle: str, text: str, n: int) -> int:
    """Where the ``n``-th ``needle`` of ``text`` is."""
    at = -1
    for _ in range(n):
        at = text.find(needle, at + 1)
    return at


@functools.lru_cache(maxsize=512)
def _read_within_bounds(source: str) -> ast.Module | Unread:
    """Cached (a rule is read over the same solution cells once per test cell): at most 512 cells of at
    most :data:`MAX_CELL_BYTES`, 32 MiB of source."""
    try:
        return parse(source)
    except SyntaxError as err:
        return Unread(
            err.lineno or 1,
            f"not plain Python ({err.msg}; magics and shell escapes are not allowed in graded code)",
        )
    except (ValueError, RecursionError, MemoryError) as err:
        return Unread(1, f"not plain Python ({type(err).__name__})")
