"""Bad input to `labs run`: one line on stderr naming the problem, exit code 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.conftest import FIXTURES, labs

CASES = {
    "missing path": (["no/such/dir"], "no/such/dir: no such file or directory"),
    "unknown device": ([str(FIXTURES / "course"), "--device", "tpu"], "unknown --device 'tpu'"),
    "shard out of range": ([str(FIXTURES / "course"), "--shard", "3/2"], "shard '3/2' is out of range"),
    "shard syntax": ([str(FIXTURES / "course"), "--shard", "half"], "shard must look like i/n"),
    "jobs": ([str(FIXTURES / "course"), "--jobs", "0"], "--jobs must be at least 1"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_exit_2(case: str):
    args, message = CASES[case]
    result = labs("run", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_invalid_json_is_one_line_exit_2(broken_notebook: Path):
    result = labs("run", str(broken_notebook.parent))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{broken_notebook}: not valid JSON (line" in lines[0], result.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_cuda_without_cuda():
    result = labs("run", str(FIXTURES / "course"), "--device", "cuda")
    assert result.returncode == 2
    assert "CUDA is not available" in result.stderr.strip()


def test_memory_sizes_are_read_as_users_type_them():
    from labs.options import parse_size

    assert parse_size("2G") == parse_size("2GiB") == parse_size("2 gb") == 2 * 2**30
    assert parse_size("512M") == 512 * 2**20 and parse_size("4096") == 4 * 2**30
    assert parse_size("1.5g") == 3 * 2**29
    assert parse_size("lots") is None and parse_size("2X") is None and parse_size("-1G") is None


def test_a_sandbox_that_cannot_import_the_project_says_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # An interpreter that sees no site-packages, and a PYTHONPATH where the project's packages are not:
    # the sandbox then cannot import graders.
    import sys

    from graders.boundary.protocol import Limits
    from graders.grader.sandbox.worker import Worker

    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setattr("graders.grader.sandbox.worker.package_path", lambda: str(tmp_path / "nowhere"))
    worker = Worker(0, Limits(), 1, use_bwrap=False, log=tmp_path / "worker0.log")
    with pytest.raises(RuntimeError) as raised:
        worker.start()
    worker.close()
    message = str(raised.value)
    assert message.startswith(f"sandbox worker 0 did not start (see {tmp_path / 'worker0.log'}): ")
    assert "No module named 'graders'" in message
    assert (
        f"the sandbox imports only what it binds (graders, labutils, zygote from {tmp_path / 'nowhere'}): "
        "is the project installed in the venv"
    ) in message and message.endswith("pip install -e .")
