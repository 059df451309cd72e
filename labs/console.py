"""Where the `labs` commands print: one console for results, one for errors, and the one-line failure."""

from __future__ import annotations

import sys
from typing import NoReturn

import typer
from rich.console import Console
from rich.text import Text

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False)


def fail(message: str) -> NoReturn:
    """Bad input: one line on stderr, exit code 2, no traceback."""
    err_console.print(printable(f"error: {message}"), soft_wrap=True)
    raise typer.Exit(2)


def printable(text: str) -> Text:
    """``text`` for the terminal: no rich markup, no control characters but newlines and tabs."""
    return Text("".join(c if c.isprintable() or c in "\n\t" else "?" for c in text))
