"""Shared test helpers: run the `labs` command as a user would, with caches inside build/."""

from __future__ import annotations

import os
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
