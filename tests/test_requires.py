"""--require turns a skip for want of slurm, postgres, hub or cuda into a failure (tests/requires.py)."""

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


def _pytest(tmp_path: Path, *options: str) -> subprocess.CompletedProcess:
    test = tmp_path / "test_needs.py"
    test.write_text(NEEDS_POSTGRES, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
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
