"""Fixed start-up: the commands that only read or write grades never import torch (3 s of every run)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, labs_env

GRADE_READERS = ("labs.cli", "graders.results", "graders.gradebook", "graders.reports", "graders.feedback",
                 "graders.coursedir")


@pytest.mark.parametrize("module", GRADE_READERS)
def test_module_imports_without_torch(module: str) -> None:
    code = f"import sys, {module}; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=labs_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False", f"importing {module} imports torch"
