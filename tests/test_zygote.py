"""Kernels forked from the zygote behave like cold kernels; without a zygote, kernels start cold."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from ci import forked
from ci.forked import ZygoteAddress, kernel_zygote
from ci.kernels import WarmKernel, start_warm_kernel
from ci.runner import kernel_env

PROBE = """
import json as _j, logging as _l, os as _o, sys as _s, warnings as _w, torch as _t
print(_j.dumps({
    "torch_log_streams": [type(h.stream).__name__ for h in _l.getLogger("torch._dynamo").handlers],
    "threads": _t.get_num_threads(), "omp": _o.environ.get("OMP_NUM_THREADS"), "path": _s.path,
    "cwd": _o.getcwd(), "own_session": _o.getsid(0) == _o.getpid() == _o.getpgid(0),
    "cuda_initialized": _t.cuda.is_initialized(), "filters": sorted(map(str, _w.filters)),
    "mplbackend": _o.environ.get("MPLBACKEND"), "hashseed": _o.environ.get("PYTHONHASHSEED"),
    "parent_is_watched": int(_o.environ["JPY_PARENT_PID"]) == _o.getppid(), "rand": float(_t.rand(1)),
}))
"""


def _probe(kernel: WarmKernel, folder: Path) -> dict:
    kernel.ready(folder)
    msg_id = kernel.client.execute(PROBE)
    text = ""
    while True:
        msg = kernel.client.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text += msg["content"]["text"]
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return json.loads(text)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return kernel_env(tmp_path / "cache", jobs=1)


@pytest.mark.slow
def test_forked_kernel_matches_a_cold_one(tmp_path: Path, env: dict[str, str]):
    with kernel_zygote(env) as zygote:
        assert zygote is not None
        kernels = [start_warm_kernel(env, zygote=zygote), start_warm_kernel(env, zygote=zygote),
                   start_warm_kernel(env)]
        try:
            first, second, cold = (_probe(k, tmp_path) for k in kernels)
            assert [k.forked for k in kernels] == [True, True, False]
            assert all((k.peak_rss_bytes() or 0) > 50 * 2**20 for k in kernels)
        finally:
            for kernel in kernels:
                kernel.shutdown()
    assert first["rand"] != second["rand"]  # each fork reseeds torch's generator, as a new process would
    for record in (first, second, cold):
        del record["rand"]
    assert first == cold
    assert first["own_session"] and first["parent_is_watched"] and not first["cuda_initialized"]


@pytest.mark.slow
def test_kernels_exit_with_the_zygote(env: dict[str, str]):
    with kernel_zygote(env) as zygote:
        kernel = start_warm_kernel(env, zygote=zygote)
        assert kernel.forked
        pid = kernel.pid
    try:
        deadline = time.monotonic() + 30
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _running(pid), "a forked kernel outlived its zygote"
    finally:
        kernel.shutdown()


def _running(pid: int | None) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.slow
def test_falls_back_to_a_cold_start(tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture,
                                    monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(forked._Fallback, "reason", None)
    gone = ZygoteAddress(str(tmp_path / "no-zygote"), forked.zygote_env(env))
    kernel = start_warm_kernel(env, zygote=gone)
    try:
        kernel.ready(tmp_path)
        assert not kernel.forked
    finally:
        kernel.shutdown()
    assert "labs run: starting kernels cold: the kernel zygote is not running (FileNotFoundError" in (
        capsys.readouterr().err)


@pytest.mark.slow
def test_a_zygote_that_cannot_import_says_so(tmp_path: Path, env: dict[str, str], capfd: pytest.CaptureFixture,
                                             monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(forked._Fallback, "reason", None)
    broken = tmp_path / "broken" / "labutils"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('labutils is broken on purpose')\n")
    env = {**env, "PYTHONPATH": str(broken.parent)}
    with kernel_zygote(env) as zygote:
        kernel = start_warm_kernel(env, zygote=zygote)
        kernel.shutdown()
    assert not kernel.forked
    err = capfd.readouterr().err
    assert "kernel zygote could not preload: ImportError: labutils is broken on purpose" in err
    assert "starting kernels cold: the kernel zygote is not running" in err


def test_disabled_by_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(forked.SWITCH, "0")
    with kernel_zygote({}) as zygote:
        assert zygote is None


def test_only_the_zygotes_environment_is_forked():
    address = ZygoteAddress("unused", {"OMP_NUM_THREADS": "1", "PATH": "/bin"})
    cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "k.json"]
    same = {"OMP_NUM_THREADS": "1", "PATH": "/bin", "JPY_SESSION_NAME": "x", "PYTHONEXECUTABLE": "y"}
    assert forked._unforkable(address, cmd, {"env": same, "kernel_id": "k"}) is None
    assert "OMP_NUM_THREADS" in forked._unforkable(address, cmd, {"env": {**same, "OMP_NUM_THREADS": "2"}})
    assert "ipykernel_launcher" in forked._unforkable(address, ["python3", *cmd[1:]], {"env": same})
    assert "stdout" in forked._unforkable(address, cmd, {"env": same, "stdout": None})


def test_fork_hazard_sees_threads():
    code = ("import threading, time\nfrom ci.zygote import fork_hazard\nprint(fork_hazard())\n"
            "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\nprint(fork_hazard())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0] == "None"
    assert "2 threads running" in out.splitlines()[1]
