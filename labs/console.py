"""Where the `labs` commands print: one console for results, one for errors, the one-line failure, and the
progress bar of a long run."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False)


def fail(message: str) -> NoReturn:
    """Bad input: one line on stderr, exit code 2, no traceback."""
    err_console.print(printable(f"error: {message}"), soft_wrap=True)
    raise typer.Exit(2)


def printable(text: str) -> Text:
    """``text`` for the terminal: no rich markup, no control characters but newlines and tabs."""
    return Text("".join(c if c.isprintable() or c in "\n\t" else "?" for c in text))


class Bar:
    """A progress bar counting finished items: :meth:`total` once the count is known, :meth:`advance` per item
    (from any thread)."""

    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._progress, self._task, self._lock = progress, task, threading.Lock()

    def total(self, count: int) -> None:
        self._progress.update(self._task, total=count)

    def advance(self, _item: object = None) -> None:
        with self._lock:
            self._progress.advance(self._task)


@contextmanager
def progress_bar(
    label: str, out: Console, *, transient: bool = False, disable: bool = False
) -> Iterator[Bar]:
    """``label``, a bar, done/total and the time elapsed on ``out``, while the block runs."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=out,
        transient=transient,
        disable=disable,
    ) as progress:
        yield Bar(progress, progress.add_task(label, total=None))
