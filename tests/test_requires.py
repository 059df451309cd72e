"""--require turns a skip for want of slurm, postgres, hub, cuda, the sandbox or the browser into a failure
(tests/requires.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

NEEDS_POSTGRES = """
from tests.requires import unavailable


def test_needs_a_server():
    unavailable("postgres", "no PostgreSQL server here")
"""


NEEDS_BWRAP = """
import pytest


@pytest.mark.usefixtures("bwrap")
def test_runs_a_sandbox():
    pass
"""


def _pytest(
    tmp_path: Path, *options: str, source: str = NEEDS_POSTGRES, path: str | None = None
) -> subprocess.CompletedProcess:
    test = tmp_path / "test_needs.py"
    test.write_text(source, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"} | ({"PATH": path} if path else {})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.conftest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            *options,
            str(test),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_missing_piece_skips_saying_why(tmp_path: Path) -> None:
    run = _pytest(tmp_path)
    assert run.returncode == 0 and "1 skipped" in run.stdout and "no PostgreSQL server here" in run.stdout, (
        run.stdout
    )


def test_a_required_missing_piece_fails(tmp_path: Path) -> None:
    run = _pytest(tmp_path, "--require=slurm,postgres")
    assert run.returncode == 1 and "1 failed" in run.stdout, run.stdout
    assert "--require=postgres, but no PostgreSQL server here" in run.stdout


def test_an_unknown_requirement_is_a_usage_error(tmp_path: Path) -> None:
    run = _pytest(tmp_path, "--require=postgress")
    assert run.returncode == 4 and "unknown postgress" in run.stderr, run.stderr


def test_a_missing_bubblewrap_fails_where_the_sandbox_is_required(tmp_path: Path) -> None:
    skipped = _pytest(tmp_path, source=NEEDS_BWRAP, path=str(tmp_path))
    assert skipped.returncode == 0 and "bubblewrap not installed" in skipped.stdout, skipped.stdout
    failed = _pytest(tmp_path, "--require=sandbox,browser", source=NEEDS_BWRAP, path=str(tmp_path))
    assert failed.returncode == 1 and "--require=sandbox, but bubblewrap not installed" in failed.stdout
