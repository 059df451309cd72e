"""`labs` commands run inside the test process (``labs_here``) and documented command lines (``run_line``): what a
separate process would show is made to show, what it would hide fails the test (docs/testing.md)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil

from tests.conftest import ROOT, labs_env

COMMAND_TIMEOUT = 900.0  # seconds a command run by labs_here may take, as the subprocess runs had
UNSEEN_WARNINGS = (
    DeprecationWarning,
    PendingDeprecationWarning,
    ImportWarning,
    ResourceWarning,
)  # Python's defaults


class CommandTimeout(BaseException):
    """A command run by :func:`labs_here` ran past its deadline (no ``except Exception`` of the command's stops it)."""


def labs_here(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = COMMAND_TIMEOUT
) -> subprocess.CompletedProcess:
    """``labs ARGS`` run inside this test process (typer's CliRunner), its output captured as `labs` does.

    The same parsing, call and printing as a user's run, without a fresh interpreter importing torch, nbgrader and
    matplotlib again (several CPU-seconds a command). What a process would show is made to show: warnings a user
    would see and log records (Python's last-resort handler) on stderr where they happen, what child processes
    write to the terminal (file descriptors 1 and 2), ``sys.exit("text")`` on stderr, usage errors naming `labs`,
    and an exception the command does not turn into its exit status raised (where a user sees a traceback, the
    test fails). What a process would hide fails the test (:func:`_left_behind`), as does running past
    ``timeout``. Tests of the process itself (start-up, signals, an interpreter's own environment) use :func:`labs`.
    """
    from typer.testing import CliRunner

    from labs.cli import app

    command = f"labs {' '.join(args)}"
    environ, handlers, unseen = dict(os.environ), logging.root.handlers[:], []
    os.environ.update(labs_env() | (env or {}))
    logging.root.handlers = []  # pytest's capture out of the way: records reach stderr as in a process
    try:
        settings, threads, children = _settings(), set(threading.enumerate()), _children()
        with (
            contextlib.chdir(cwd),
            warnings.catch_warnings(),
            _terminal() as terminal,
            _deadline(timeout, command),
        ):
            warnings.filterwarnings(
                "always", append=True
            )  # after the project's own filters (errors stay errors)
            warnings.showwarning = _show_warning(unseen)
            result = CliRunner().invoke(app, list(args), prog_name="labs")
        _left_behind(command, settings, threads, children)
    finally:
        os.environ.clear()
        os.environ.update(environ)
        logging.root.handlers = handlers
    for seen in unseen:  # what a user would not see goes to pytest's warnings summary
        warnings.warn_explicit(seen[0], seen[1], seen[2], seen[3])
    stdout, stderr = result.stdout + terminal["out"], result.stderr + terminal["err"]
    exit_text = result.exception.code if isinstance(result.exception, SystemExit) else None
    if isinstance(exit_text, str):  # CliRunner prints it to stdout; Python prints it to stderr
        stdout, stderr = stdout.replace(f"{exit_text}\n", "", 1), stderr + f"{exit_text}\n"
    elif result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(["labs", *args], result.exit_code, stdout, stderr)


def _show_warning(unseen: list) -> Callable[..., None]:
    """``warnings.showwarning`` as a process's: on (the command's) stderr where it happens, unless Python's default
    filters hide it from a user (kept in ``unseen``)."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, UNSEEN_WARNINGS):
            unseen.append((message, category, filename, lineno))
        else:
            sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    return show


@contextlib.contextmanager
def _terminal() -> Iterator[dict[str, str]]:
    """File descriptors 1 and 2 into files while the command runs; their text (what child processes printed) after."""
    caught: dict[str, str] = {}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        saved = [os.dup(1), os.dup(2)]
        sys.__stdout__.flush()
        sys.__stderr__.flush()
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            yield caught
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            for name, file in (("out", out), ("err", err)):
                file.seek(0)
                caught[name] = file.read().decode(errors="replace")


def _children() -> set[int]:
    """This process's live descendants."""
    me = psutil.Process()
    return {p.pid for p in me.children(recursive=True) if _alive(p)}


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# What an installed package puts on sys.path when first imported (setuptools its _vendor folder) is an import's
# doing, in a user's process too, not the command's: such entries are neither compared nor taken away.
SITE_PACKAGES = sysconfig.get_path("purelib")
WATCHED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGPIPE)


def _settings() -> dict[str, object]:
    """What a command could change for the whole process, which a later test in it would inherit."""
    mask = os.umask(0o022)
    os.umask(mask)
    found: dict[str, object] = {
        "environment": dict(os.environ),
        "sys.path": [path for path in sys.path if not path.startswith(SITE_PACKAGES)],
        "signal handlers": {s.name: signal.getsignal(s) for s in WATCHED_SIGNALS},
        "root logger": (logging.root.level, list(logging.root.handlers)),
        "umask": mask,
    }
    if (torch := sys.modules.get("torch")) is not None:  # imported by the command itself: nothing to compare
        found["torch defaults"] = (
            torch.get_default_dtype(),
            torch.get_num_threads(),
            torch.is_grad_enabled(),
            torch.are_deterministic_algorithms_enabled(),
        )
    return found


def _left_behind(command: str, settings: dict[str, object], threads: set, children: set[int]) -> None:
    """Fail when ``command`` left a daemon thread running (a process would have killed it, its work undone), another
    thread or a child process still running 5 s later (a process would not have exited, or would have hung its
    caller), or a setting of the whole process changed (``sys.path`` is put back, the processes killed)."""
    daemons = [t.name for t in threading.enumerate() if t not in threads and t.is_alive() and t.daemon]
    deadline = time.monotonic() + 5.0
    while True:  # a process waits for its other threads at exit, and kills daemon threads: their work is lost
        new_threads = daemons + [
            t.name for t in threading.enumerate() if t not in threads and t.is_alive() and not t.daemon
        ]
        new_children = sorted(_children() - children)
        if daemons or not (new_threads or new_children) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    now = _settings()
    changed = [name for name, value in settings.items() if name in now and now[name] != value]
    environ = settings["environment"]
    assert isinstance(environ, dict)
    if "environment" in changed:
        keys = sorted(k for k in {*environ, *os.environ} if environ.get(k) != os.environ.get(k))
        changed[changed.index("environment")] = f"environment variables {keys}"
    sys.path[:] = [*settings["sys.path"], *(p for p in sys.path if p.startswith(SITE_PACKAGES))]  # type: ignore[misc]
    for pid in new_children:
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
    assert not (new_threads or new_children or changed), (
        f"{command} left behind: threads {new_threads}, processes {new_children}, changed: {changed}"
    )


@contextlib.contextmanager
def _deadline(seconds: float, command: str) -> Iterator[None]:
    """:class:`CommandTimeout` in this (the main) thread after ``seconds``, as ``subprocess.run(timeout=...)`` stopped a process."""

    def expire(_signum: int, _frame: object) -> None:
        raise CommandTimeout(f"{command}: still running after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# A line with any of these means more than its words: bash expands, quotes or redirects it.
SHELL_SYNTAX = re.compile(r"[|&;<>()$`*?\[\]{}~\\'\"#=]")


def run_line(line: str, cwd: Path) -> subprocess.CompletedProcess:
    """A documented command line, as a reader runs it: bash runs it, unless it is a `labs` command of plain
    words (nothing bash would expand, quote or redirect), which :func:`labs_here` runs with the same words."""
    words = line.split()
    if words[:1] == ["labs"] and not SHELL_SYNTAX.search(line):
        return labs_here(*words[1:], cwd=cwd)
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=labs_env(), capture_output=True, text=True, timeout=900
    )
