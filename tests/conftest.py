"""Shared test helpers: run the `labs` command as a user would, with caches inside build/."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.requires import REQUIRED, needs_bwrap, require

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
BIN = Path(sys.executable).parent


def labs_env() -> dict[str, str]:
    """Environment for subprocesses: the venv first on PATH, caches in build/."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    cache = ROOT / "build" / "cache"
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache / "inductor"))
    env.setdefault("MPLCONFIGDIR", str(cache / "matplotlib"))
    env.setdefault("IPYTHONDIR", str(cache / "ipython"))
    return env


def labs(*args: str, cwd: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``labs ARGS`` and capture its output (text)."""
    return subprocess.run(
        [str(BIN / "labs"), *args], cwd=cwd, env=labs_env(), capture_output=True, text=True, timeout=timeout
    )


COMMAND_TIMEOUT = 900.0  # seconds a command run by labs_here may take, as the subprocess runs had
UNSEEN_WARNINGS = (
    DeprecationWarning,
    PendingDeprecationWarning,
    ImportWarning,
    ResourceWarning,
)  # Python's defaults


def labs_here(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = COMMAND_TIMEOUT
) -> subprocess.CompletedProcess:
    """``labs ARGS`` run inside this test process (typer's CliRunner), its output captured as `labs` does.

    The same parsing, call and printing as a user's run, without a fresh interpreter importing torch, nbgrader and
    matplotlib again (several CPU-seconds a command). What a process would show or do differently is made to
    show here: the warnings a user would see end its stderr, a ``sys.exit("text")`` puts the text on stderr, and
    an exception the command does not turn into its exit status is raised (where a user sees a traceback, the
    test fails). What a process would hide is refused: the command fails the test when it leaves a thread or a
    child process running or an environment variable changed (a process would have kept running, or hung its
    caller, and a later test here would inherit it), or runs past ``timeout``. Tests of the process itself
    (start-up, signals, an interpreter's own environment) use :func:`labs`.
    """
    from typer.testing import CliRunner

    from labs.cli import app

    command = f"labs {' '.join(args)}"
    settings, threads, children = _settings(), set(threading.enumerate()), _children()
    with contextlib.chdir(cwd), warnings.catch_warnings(record=True) as caught, _deadline(timeout, command):
        warnings.filterwarnings("always", append=True)  # after the project's own filters (errors stay errors)
        result = CliRunner().invoke(app, list(args), env=labs_env() | (env or {}), prog_name="labs")
    _left_behind(command, settings, threads, children)
    stdout, stderr = result.stdout, result.stderr
    exit_text = result.exception.code if isinstance(result.exception, SystemExit) else None
    if isinstance(exit_text, str):  # CliRunner prints it to stdout; Python prints it to stderr
        stdout, stderr = stdout.removesuffix(f"{exit_text}\n"), stderr + f"{exit_text}\n"
    elif result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    for seen in caught:
        if issubclass(seen.category, UNSEEN_WARNINGS):
            warnings.warn_explicit(
                seen.message, seen.category, seen.filename, seen.lineno
            )  # to pytest's summary
        else:
            stderr += warnings.formatwarning(
                seen.message, seen.category, seen.filename, seen.lineno, seen.line
            )
    return subprocess.CompletedProcess(["labs", *args], result.exit_code, stdout, stderr)


def _children() -> set[int]:
    """This process's live descendants."""
    me = psutil.Process()
    return {p.pid for p in me.children(recursive=True) if _alive(p)}


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


WATCHED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGPIPE)


def _settings() -> dict[str, object]:
    """What a command could change for the whole process, which a later test in it would inherit."""
    mask = os.umask(0o022)
    os.umask(mask)
    found: dict[str, object] = {
        "environment": dict(os.environ),
        "sys.path": list(sys.path),
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
    """Fail when ``command`` left a thread or a process running (after a grace of 5 s for exits) or a setting of
    the process changed (the environment and ``sys.path`` are put back, the processes killed)."""
    deadline = time.monotonic() + 5.0
    while True:
        new_threads = [t.name for t in threading.enumerate() if t not in threads and t.is_alive()]
        new_children = sorted(_children() - children)
        if not (new_threads or new_children) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    now = _settings()
    changed = [name for name, value in settings.items() if name in now and now[name] != value]
    environ = settings["environment"]
    assert isinstance(environ, dict)
    if "environment" in changed:
        keys = sorted(k for k in {*environ, *os.environ} if environ.get(k) != os.environ.get(k))
        changed[changed.index("environment")] = f"environment variables {keys}"
    os.environ.clear()
    os.environ.update(environ)
    sys.path[:] = settings["sys.path"]  # type: ignore[index]
    for pid in new_children:
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
    assert not (new_threads or new_children or changed), (
        f"{command} left behind: threads {new_threads}, processes {new_children}, changed: {changed}"
    )


@contextlib.contextmanager
def _deadline(seconds: float, command: str) -> Iterator[None]:
    """TimeoutError in this (the main) thread after ``seconds``, as ``subprocess.run(timeout=...)`` gave."""

    def expire(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"{command}: still running after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


SHELL_SYNTAX = re.compile(
    r"[|&;<>()$`*?\[\]{}~\\'\"#=]"
)  # a line with any of these means more than its words


def run_line(line: str, cwd: Path) -> subprocess.CompletedProcess:
    """A documented command line, as a reader runs it: bash runs it, unless it is a `labs` command of plain
    words (nothing bash would expand, quote or redirect), which :func:`labs_here` runs with the same words."""
    words = line.split()
    if words[:1] == ["labs"] and not SHELL_SYNTAX.search(line):
        return labs_here(*words[1:], cwd=cwd)
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=labs_env(), capture_output=True, text=True, timeout=900
    )


@pytest.fixture(autouse=True)
def _matplotlib_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPLCONFIGDIR", str(ROOT / "build" / "cache" / "matplotlib"))


@pytest.fixture
def broken_notebook(tmp_path: Path) -> Path:
    """A notebook file that is not valid JSON, in its own folder."""
    from tests.fixtures.generator.make_fixtures import write_broken

    return write_broken(tmp_path / "invalid_json" / "1_broken.ipynb")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--require",
        default="",
        metavar="NAMES",
        help="comma-separated: slurm, postgres, hub, cuda, sandbox, browser; a test that needs one that is missing fails "
        "instead of skipping (tests/requires.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    require(config.getoption("--require"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``cuda`` skip, saying so, where torch sees no CUDA device (fail under --require=cuda)."""
    cuda = [item for item in items if item.get_closest_marker("cuda")]
    if not cuda:
        return
    import torch

    if not torch.cuda.is_available():
        if "cuda" in REQUIRED:
            raise pytest.UsageError(
                f"--require=cuda, but torch sees no CUDA device ({len(cuda)} tests need one)"
            )
        for item in cuda:
            item.add_marker(
                pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
            )


@pytest.fixture
def bwrap() -> None:
    """The test runs jobs in the grading sandbox: bubblewrap is needed (tests/requires.py: ``sandbox``)."""
    needs_bwrap()
