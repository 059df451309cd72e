"""Shared test helpers: run the `labs` command as a user would, with caches inside build/."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

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


def labs_here(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``labs ARGS`` run inside this test process (typer's CliRunner), its output captured as `labs` does.

    The same parsing, call and printing as a user's run, without a fresh interpreter importing torch, nbgrader
    and matplotlib again (several CPU-seconds a command). What the command starts (sandboxes, kernels) are
    processes as ever. An exception the command does not turn into its exit status is raised here: where a
    user would see a traceback, the test fails. Tests of the process itself (start-up, signals) use ``labs``.
    """
    from typer.testing import CliRunner

    from labs.cli import app

    with contextlib.chdir(cwd):
        result = CliRunner().invoke(app, list(args), env=labs_env() | (env or {}))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(["labs", *args], result.exit_code, result.stdout, result.stderr)


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
