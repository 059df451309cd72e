"""Fixed start-up: the commands that only read or write grades never import torch (3 s of every run), nor
does a mistyped `labs run` or `labs grade`; the installed packages carry their bytecode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, labs_env

GRADE_READERS = (
    "labs.cli",
    "graders.grader.results",
    "graders.nbgrader.gradebook",
    "graders.nbgrader.reports",
    "graders.nbgrader.feedback",
    "graders.coursedir",
)


@pytest.mark.parametrize("module", GRADE_READERS)
def test_module_imports_without_torch(module: str) -> None:
    code = f"import sys, {module}; print('torch' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=labs_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False", f"importing {module} imports torch"


@pytest.mark.parametrize(
    "args",
    [
        ["run", "no/such/dir"],
        ["run", "tests/fixtures/course", "--device", "tpu"],
        ["grade", "build", "--cpu", "0"],
        ["grade", "build", "--memory", "lots"],
    ],
)
def test_a_mistyped_command_is_answered_without_torch(args: list[str]) -> None:
    """A path that is not there, an unknown device, a limit that is not one: the one-line error comes
    before torch loads."""
    code = (
        "import sys\nfrom labs.cli import app\ntry:\n    app(" + repr(args) + ")\n"
        "except SystemExit as end:\n    print(end.code, 'torch' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=labs_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.split() == ["2", "False"], proc.stdout + proc.stderr


def test_the_cli_knows_the_devices_notebooks_know() -> None:
    from labs.options import DEVICES
    from labutils.notebook import DEVICE_CHOICES

    assert DEVICES == DEVICE_CHOICES


@pytest.mark.parametrize("package", ["nbformat", "jupyter_client", "onnx"])
def test_installed_packages_carry_their_bytecode(package: str) -> None:
    """Every module of the package has its .pyc: the sandboxes see site-packages read-only, so without
    them each job compiles what it imports (make venv compiles at install, as pip does)."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin, f"{package} is not installed"
    sources = sorted(Path(spec.origin).parent.rglob("*.py"))
    missing = [str(p) for p in sources if not Path(importlib.util.cache_from_source(str(p))).is_file()]
    assert sources and not missing, (
        f"{package}: {len(missing)} of {len(sources)} modules without bytecode: {missing[:3]}"
    )


def _defaults(command: str) -> dict[str, object]:
    import typer

    from labs.cli import app

    group = typer.main.get_command(app)
    return {p.name: p.default for p in group.commands[command].params}


def test_option_defaults_are_those_of_the_code_that_holds_each_limit() -> None:
    """The commands' limits are the sandbox's (`Limits`) and `labs run`'s own (labs/options.py), not numbers of
    their own; export writes CSV unless told."""
    from graders.boundary.protocol import Limits
    from labs.options import NOTEBOOK_TIMEOUT, RUN_JOBS

    limits = Limits()
    grade, check_lab, run = _defaults("grade"), _defaults("check-lab"), _defaults("run")
    assert (grade["timeout"], grade["cpu"], grade["memory"]) == (
        limits.wall_seconds,
        limits.cpu_seconds,
        f"{limits.memory_bytes >> 30}G",
    )
    assert check_lab["timeout"] == limits.wall_seconds
    assert (run["jobs"], run["timeout"]) == (RUN_JOBS, NOTEBOOK_TIMEOUT)
    assert _defaults("export")["format"] == "csv"
