"""Kernels forked from the zygote behave like cold kernels; without a zygote, kernels start cold."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from labs.run import forked
from labs.run.execute import kernel_env
from labs.run.forked import ZygoteAddress, kernel_zygote
from labs.run.kernels import WarmKernel, start_warm_kernel

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
        kernels = [
            start_warm_kernel(env, zygote=zygote),
            start_warm_kernel(env, zygote=zygote),
            start_warm_kernel(env),
        ]
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
def test_falls_back_to_a_cold_start(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(forked._Fallback, "reason", None)
    gone = ZygoteAddress(str(tmp_path / "no-zygote"), forked.zygote_env(env))
    kernel = start_warm_kernel(env, zygote=gone)
    try:
        kernel.ready(tmp_path)
        assert not kernel.forked
    finally:
        kernel.shutdown()
    assert "labs run: starting kernels cold: the zygote is not running (FileNotFoundError" in (
        capsys.readouterr().err
    )


@pytest.mark.slow
def test_a_zygote_that_cannot_import_says_so(
    tmp_path: Path, env: dict[str, str], capfd: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
):
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
    assert "starting kernels cold: the zygote is not running" in err


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
    code = (
        "import threading, time\nfrom zygote.server import fork_hazard\nprint(fork_hazard())\n"
        "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\nprint(fork_hazard())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0] == "None"
    assert "2 threads running" in out.splitlines()[1]


# --- the core every zygote shares (zygote/) ---------------------------------------------------

CHILD = """
import sys, torch, numpy, random
def main(argv):
    print(torch.rand(1).item(), numpy.random.rand(), random.random(), flush=True)
    sys.exit(int(argv[0]))
"""


@pytest.fixture
def core_zygote(tmp_path: Path):
    from zygote.client import Zygote

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "child_target.py").write_text(CHILD)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "pkg"), "OMP_NUM_THREADS": "1"}
    zygote = Zygote.start("child_target:main", ["torch", "numpy"], env, folder=tmp_path / "z")
    yield zygote, env, tmp_path
    zygote.stop()


@pytest.mark.slow
def test_forked_children_draw_their_own_random_numbers_and_report_exit_codes(core_zygote):
    zygote, env, tmp_path = core_zygote
    children = [
        zygote.fork(
            {"argv": [str(code)], "env": env, "cwd": str(tmp_path), "stdout": str(tmp_path / f"{k}.out")}
        )
        for k, code in enumerate((0, 3, 0))
    ]
    assert [child.wait(60) for child in children] == [0, 3, 0]
    draws = [(tmp_path / f"{k}.out").read_text().split() for k in range(3)]
    for source in range(3):  # torch, numpy and random each differ between every two children
        assert len({d[source] for d in draws}) == 3, draws


@pytest.mark.slow
def test_a_child_whose_zygote_died_counts_as_killed(core_zygote):
    zygote, env, tmp_path = core_zygote
    (tmp_path / "pkg" / "sleeper.py").write_text("import time\ndef main(argv):\n    time.sleep(60)\n")
    child = zygote.fork({"argv": ["0"], "env": env, "cwd": str(tmp_path)}, timeout=60)
    assert child.poll() is None
    zygote.proc.kill()
    zygote.proc.wait()
    child.kill()
    assert child.wait(10) == -9 or child.returncode == -9


def test_fork_checked_refuses_from_a_threaded_process():
    code = (
        "import threading, time\nfrom zygote.server import ForkRefused, fork_checked\n"
        "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
        "try:\n    fork_checked()\nexcept ForkRefused as err:\n    print('refused:', err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("refused: 2 threads running")


def test_frames_round_trip_and_refuse_corrupt_lengths(tmp_path: Path):
    import os

    from zygote import frames

    read, write = os.pipe()
    frames.send(write, {"pid": 7, "text": "ü" * 3})
    frames.write_frame(write, b"raw")
    frames.write_frame(write, b"x" * 100)
    os.write(write, frames.HEADER.pack(frames.MAX_FRAME + 1))
    os.close(write)
    assert frames.receive(read, timeout=5) == {"pid": 7, "text": "ü" * 3}
    assert frames.read_frame(read) == b"raw"
    with pytest.raises(ValueError, match="corrupt"):  # a reader's own budget, met before the frame is read
        frames.read_frame(read, limit=99)
    with pytest.raises(ValueError, match="corrupt"):
        frames.read_frame(read)
    os.close(read)


def test_preload_names_the_import_that_left_a_thread_running(tmp_path: Path):
    (tmp_path / "threaded_mod.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
    )
    code = (
        "import sys\nsys.path.insert(0, sys.argv[1])\nfrom zygote.server import ForkRefused, preload\n"
        "print(preload(['json', 'no_such_module_x'], required=False))\n"
        "try:\n    preload(['threaded_mod'], required=False)\nexcept ForkRefused as err:\n    print(err)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines() == [
        "['no_such_module_x']",
        "importing threaded_mod started a thread: a zygote must not preload it",
    ]


def test_preload_waits_for_a_thread_that_ends_a_moment_later(tmp_path: Path):
    """Not every thread an import starts is a hazard: one that ends within the grace period is not."""
    (tmp_path / "brief_thread_mod.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(0.3,)).start()\n"
    )
    code = (
        "import sys\nsys.path.insert(0, sys.argv[1])\nfrom zygote.server import fork_hazard, preload\n"
        "print(preload(['brief_thread_mod']), fork_hazard())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[] None"


FORKED_HERE = """
import json, sys, threading, time
from pathlib import Path
from zygote.client import Zygote
from zygote.server import ForkRefused, preload

tmp = Path(sys.argv[1])
env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp / "pkg"), "OMP_NUM_THREADS": "1"}
sys.path.insert(0, str(tmp / "pkg"))
preload(["torch", "numpy"])
zygote = Zygote.forked("child_target:main", ["torch", "numpy"], env, folder=tmp / "z")
children = [zygote.fork({"argv": [str(code)], "env": env, "cwd": str(tmp), "stdout": str(tmp / f"{k}.out")})
            for k, code in enumerate((0, 3, 0))]
codes = [child.wait(60) for child in children]
zygote.stop()
threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
try:
    Zygote.forked("child_target:main", [], env, folder=tmp / "z2")
    refused = ""
except ForkRefused as err:
    refused = str(err)
print(json.dumps({"codes": codes, "server_exit": zygote.proc.returncode, "refused": refused,
                  "draws": [(tmp / f"{k}.out").read_text().split() for k in range(3)]}))
"""


@pytest.mark.slow
def test_a_zygote_forked_from_a_warm_process_serves_like_a_started_one(tmp_path: Path):
    """Zygote.forked (a sandbox job forks the ranks' zygote from itself): children, exit codes and random
    state as with Zygote.start; it exits when stopped; a threaded process is refused."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "child_target.py").write_text(CHILD)
    proc = subprocess.run(
        [sys.executable, "-c", FORKED_HERE, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["codes"] == [0, 3, 0] and found["server_exit"] == 0, found
    for source in range(3):
        assert len({d[source] for d in found["draws"]}) == 3, found["draws"]
    assert found["refused"].startswith("2 threads running"), found["refused"]
