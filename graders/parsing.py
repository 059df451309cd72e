"""The one way the grader reads Python source: :func:`parse` and :func:`parsed`.

Grading runs in threads of one process, and CPython 3.11's ``ast.parse`` is not safe there: two threads
converting trees at once can raise ``SystemError`` ("AST constructor recursion depth mismatch"), which
reached a right answer as "grader error: SystemError" about once in a few hundred gradings. Every parse of
the grader's goes through one lock (parsing holds the GIL anyway, so the lock costs no throughput); a
parse that still meets the error (another library parsing outside the lock) is repeated, a few times,
since the error is the grader's and never the cell's. tests/test_imports.py checks that no other grader
or ``labs`` module calls ``ast.parse`` itself.
"""

from __future__ import annotations

import ast
import threading

TRIES = 5
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
