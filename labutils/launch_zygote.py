"""A warm rank factory: one process imports torch once, then forks a fresh rank per request.

Starting a rank with ``python -m ...`` costs an ``import torch`` (3 s on an idle 2-core machine,
much more on a loaded one), and DDP's constructor imports ``torch._dynamo`` (2-3 s more). The
*zygote* pays this once per kernel: it preloads those modules (never touching CUDA, and
single-threaded because ``OMP_NUM_THREADS=1``, so forking it is safe), then forks a child
per rank on request. Each child is still a separate process with its own process group; it starts
a new session, writes its stdout/stderr to files the parent tails, takes the environment of the
request, and runs :func:`labutils.launch_worker.main`. The zygote reaps its children and writes
each exit code to a file. It exits when the process that started it closes its stdin (that
process died), and a rank whose zygote disappears exits through its watchdog.

Server side: ``python -m labutils.launch_zygote``. Client side: :func:`start_zygote`, :func:`fork_rank`.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from labutils.launch_procs import KERNEL_PID_ENV

PRELOAD = ("torch", "torch.nn", "torch.distributed", "torch.nn.parallel", "torch.utils.data", "torch._dynamo",
           "torch.distributed.fsdp", "torch.distributed.tensor",
           "torch.distributed.algorithms.ddp_comm_hooks.default_hooks", "labutils.launch_worker")
ZYGOTE_ENV = "LABUTILS_ZYGOTE"

# --- server ------------------------------------------------------------------------------------


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _reap(exit_files: dict[int, str]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        path = exit_files.pop(pid, None)
        if path is not None:
            _write_atomic(path, str(os.waitstatus_to_exitcode(status)))


def _become_rank(request: dict[str, Any], close_fds: tuple[int, ...]) -> None:
    """In the forked child: detach, redirect output, take the request's environment, run the rank."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in close_fds:
            os.close(fd)
        os.setsid()
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(target, fd)
            os.close(target)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 (line-buffered fd 1)
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        random.seed()  # the zygote's Python RNG state must not be shared by every rank
        from labutils.launch_worker import main

        main(request["argv"])  # ends the process itself (os._exit) on success and on failure
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve() -> None:
    """Preload, say ready, then fork one rank per JSON line on stdin until stdin closes."""
    for name in PRELOAD:
        importlib.import_module(name)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_files: dict[int, str] = {}
    os.write(1, b'{"ready": true}\n')
    pending = b""
    while True:
        try:
            ready, _, _ = select.select([0, wake_r], [], [], 1.0)
        except InterruptedError:
            continue
        if wake_r in ready:
            while True:
                try:
                    if not os.read(wake_r, 512):
                        break
                except BlockingIOError:
                    break
        _reap(exit_files)
        if 0 not in ready:
            continue
        data = os.read(0, 65536)
        if not data:
            return  # the client is gone; ranks notice through their watchdog
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                _become_rank(request, (wake_r, wake_w))
            exit_files[pid] = request["exit"]
            os.write(1, json.dumps({"pid": pid}).encode() + b"\n")


# --- client ------------------------------------------------------------------------------------


class ForkedRank:
    """A rank forked by the zygote, with the part of the ``subprocess.Popen`` API the launcher uses.

    Its exit code comes only from the exit file the zygote writes when it reaps the rank: that
    needs no ``/proc``, which in a nested pid namespace (the grading sandbox) can list another
    namespace's processes under the same numbers.
    """

    def __init__(self, pid: int, exit_file: Path, zygote: subprocess.Popen) -> None:
        self.pid = pid
        self.exit_file = exit_file
        self.zygote = zygote
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code once the zygote reaped the rank (``-9`` if the zygote died first)."""
        if self.returncode is None:
            if self.exit_file.exists():
                self.returncode = int(self.exit_file.read_text())
            elif self.zygote.poll() is not None:
                self.returncode = int(self.exit_file.read_text()) if self.exit_file.exists() else -9
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the exit code (raises ``subprocess.TimeoutExpired``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"rank pid {self.pid}", timeout)
            time.sleep(0.02)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        """SIGKILL the rank."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class _Zygote:
    lock = threading.Lock()
    proc: subprocess.Popen | None = None
    ready = False


def zygote_pid() -> int | None:
    """Pid of this process's zygote, if one is running."""
    proc = _Zygote.proc
    return proc.pid if proc is not None and proc.poll() is None else None


def _read_line(proc: subprocess.Popen, timeout: float) -> dict[str, Any]:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else b""
    if not line:
        raise RuntimeError(f"the launch zygote did not answer within {timeout:g} s (exit code {proc.poll()})")
    return json.loads(line)


def _ensure_started(env: dict[str, str]) -> subprocess.Popen:
    """Start the zygote unless one is alive (call with the lock held); does not wait for it."""
    if _Zygote.proc is None or _Zygote.proc.poll() is not None:
        env = {key: value for key, value in env.items() if key not in ("TMPDIR", "LABUTILS_RUN_ID")}
        env.setdefault(KERNEL_PID_ENV, str(os.getpid()))
        env.update({ZYGOTE_ENV: "1", "OMP_NUM_THREADS": "1"})
        _Zygote.proc = subprocess.Popen([sys.executable, "-m", "labutils.launch_zygote"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                        start_new_session=True)
        _Zygote.ready = False
    return _Zygote.proc


def start_zygote(env: dict[str, str]) -> None:
    """Start the zygote in the background (it imports torch while the caller goes on)."""
    with _Zygote.lock:
        _ensure_started(env)


def fork_rank(argv: list[str], env: dict[str, str], folder: Path, rank: int, timeout: float = 300.0) -> ForkedRank:
    """Ask the zygote (started on first use) for a rank running ``labutils.launch_worker.main(argv)``.

    Its output goes to ``folder/rank<k>.out`` / ``.err`` and its exit code to ``folder/rank<k>.exit``.
    """
    with _Zygote.lock:
        proc = _ensure_started(env)
        if not _Zygote.ready:
            try:
                _read_line(proc, timeout)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            _Zygote.ready = True
        paths = {kind: str(folder / f"rank{rank}.{kind}") for kind in ("out", "err", "exit")}
        request = {"argv": argv, "env": env, "cwd": os.getcwd(), "stdout": paths["out"], "stderr": paths["err"],
                   "exit": paths["exit"]}
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        pid = _read_line(proc, 60.0)["pid"]
    return ForkedRank(pid, Path(paths["exit"]), proc)


if __name__ == "__main__":
    serve()
