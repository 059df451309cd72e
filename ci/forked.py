"""Kernels forked from the zygote (:mod:`ci.zygote`): start it, ask it for kernels, watch them.

:func:`kernel_zygote` starts one zygote per ``labs run`` with the kernels' environment.
:class:`ZygoteProvisioner` is jupyter_client's local provisioner with one change: ``launch_kernel``
asks the zygote for a forked kernel instead of running ``python -m ipykernel_launcher``, and falls back
to that cold launch, saying so once per runner process, when the zygote cannot serve (it failed to
start or to import, it refuses to fork, or the kernel's command or environment is not the zygote's).
Set ``LABS_ZYGOTE=0`` to start every kernel cold.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_client import KernelManager
from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

SWITCH = "LABS_ZYGOTE"
# Variables a kernel's launch sets on top of the run's environment; anything else must match the zygote's.
LAUNCH_VARIABLES = ("JPY_", "PYTHONEXECUTABLE")
POPEN_OPTIONS = {"env", "cwd", "kernel_id", "extra_arguments"}


def runtime_dir() -> Path:
    """Private folder for kernel sockets and each run's zygote folder."""
    runtime = Path(tempfile.gettempdir()) / f"labs-kernels-{os.getuid()}"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return runtime


def say(message: str) -> None:
    """One line on stderr, where ``labs run`` reports trouble that does not fail a notebook."""
    print(f"labs run: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ZygoteAddress:
    """The zygote's folder (its socket, its kernels' exit codes) and the environment it imported under."""

    folder: str
    env: dict[str, str]

    @property
    def socket(self) -> str:
        return os.path.join(self.folder, "socket")


def zygote_env(env: dict[str, str]) -> dict[str, str]:
    """The kernels' environment as a launch would give it (jupyter_client drops PYTHONEXECUTABLE)."""
    return {key: value for key, value in env.items() if not key.startswith(LAUNCH_VARIABLES)}


@contextmanager
def kernel_zygote(env: dict[str, str]) -> Iterator[ZygoteAddress | None]:
    """Run a zygote for the duration of the block; None when disabled or when it could not start."""
    if os.environ.get(SWITCH) == "0":
        yield None
        return
    address = ZygoteAddress(str(runtime_dir() / f"zygote-{uuid.uuid4().hex[:12]}"), zygote_env(env))
    os.mkdir(address.folder, mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address.socket)
        listener.listen(64)  # bound before the zygote imports anything: early requests wait in the backlog
        proc = subprocess.Popen([sys.executable, "-m", "ci.zygote", "--fd", str(listener.fileno())],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=address.env,
                                pass_fds=(listener.fileno(),), start_new_session=True)
    except OSError as err:
        say(f"starting kernels cold: the kernel zygote did not start ({type(err).__name__}: {err})")
        listener.close()
        shutil.rmtree(address.folder, ignore_errors=True)
        yield None
        return
    listener.close()  # the zygote holds the only copy: if it dies, requests fail at once
    try:
        yield address
    finally:
        _stop(proc)
        shutil.rmtree(address.folder, ignore_errors=True)


def _stop(proc: subprocess.Popen) -> None:
    """Close the zygote's stdin (it exits on EOF); kill it if it lingers."""
    with suppress(OSError):
        proc.stdin.close()  # type: ignore[union-attr]
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class ForkedProcess:
    """A kernel the zygote forked, with the part of the ``subprocess.Popen`` API a provisioner uses.

    It is not our child: the zygote reaps it and writes its exit code into ``exit_file`` (empty until then).
    """

    stdin = stdout = stderr = None

    def __init__(self, pid: int, exit_file: Path) -> None:
        self.pid = pid
        self.exit_file = exit_file
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code once the kernel ended (``-9`` if it vanished without one), else None."""
        if self.returncode is None:
            self.returncode = _exit_code(self.exit_file)
            if self.returncode is None and not _exists(self.pid):
                time.sleep(0.2)  # the zygote may be writing the exit code right now
                code = _exit_code(self.exit_file)
                self.returncode = -9 if code is None else code
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the exit code (raises ``subprocess.TimeoutExpired``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"kernel pid {self.pid}", timeout or 0)
            time.sleep(0.02)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, signum: int) -> None:
        """Signal the kernel process (a provisioner prefers its process group)."""
        with suppress(ProcessLookupError):
            os.kill(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL the kernel."""
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        """SIGTERM the kernel."""
        self.send_signal(signal.SIGTERM)


def _exit_code(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (OSError, ValueError):  # not written yet (empty), or no longer wanted (removed)
        return None


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def request_kernel(address: ZygoteAddress, request: dict[str, Any], timeout: float = 120) -> int:
    """Ask the zygote to fork a kernel; its pid. Waits while the zygote is still importing.

    Creates the request's (empty) exit-code file first: the zygote writes only into an existing one.
    """
    try:
        Path(request["exit"]).write_text("")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(address.socket)
            sock.sendall(json.dumps(request).encode() + b"\n")
            with sock.makefile("rb") as replies:
                line = replies.readline()
    except (ConnectionError, FileNotFoundError) as err:
        raise ConnectionError(f"the kernel zygote is not running ({type(err).__name__}: {err})") from err
    if not line:
        raise ConnectionError("the kernel zygote is not running (it closed the connection)")
    reply = json.loads(line)
    if "error" in reply:
        raise RuntimeError(f"the kernel zygote refused to fork: {reply['error']}")
    return int(reply["pid"])


class _Fallback:
    """Why this runner process stopped asking the zygote (said once), or None while it still asks."""

    reason: str | None = None


def _unforkable(address: ZygoteAddress, cmd: list[str], kwargs: dict[str, Any]) -> str | None:
    """Why this launch cannot be a fork from ``address``'s zygote, or None."""
    if cmd[:3] != [sys.executable, "-m", "ipykernel_launcher"]:
        return f"kernel command {' '.join(cmd[:3])} is not this Python's ipykernel_launcher"
    if set(kwargs) - POPEN_OPTIONS:
        return f"launch options {sorted(set(kwargs) - POPEN_OPTIONS)} are not supported by the zygote"
    env = zygote_env(kwargs.get("env", os.environ))
    differ = sorted(k for k in env.keys() | address.env.keys() if env.get(k) != address.env.get(k))
    if differ:
        return f"kernel environment differs from the zygote's in {', '.join(differ[:5])}"
    return None


class ZygoteProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, launching kernels as forks of the zygote at ``address``."""

    address: ZygoteAddress | None = None

    @property
    def exit_file(self) -> Path | None:
        return Path(self.address.folder) / f"{self.kernel_id}.exit" if self.address else None

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        """Fork the kernel from the zygote; launch it cold if the zygote cannot serve."""
        if self.address is not None and _Fallback.reason is None:
            reason = _unforkable(self.address, cmd, kwargs) or self._fork(cmd, kwargs)
            if reason is None:
                return self.connection_info
            _Fallback.reason = reason
            say(f"starting kernels cold: {reason}")
        return await super().launch_kernel(cmd, **kwargs)

    def _fork(self, cmd: list[str], kwargs: dict[str, Any]) -> str | None:
        """Have the zygote fork the kernel and adopt it; None, or why it could not."""
        assert self.address is not None and self.exit_file is not None
        cwd = str(kwargs.get("cwd") or os.getcwd())
        request = {"argv": cmd[3:], "env": kwargs.get("env", dict(os.environ)), "cwd": cwd,
                   "exit": str(self.exit_file)}
        try:
            pid = request_kernel(self.address, request)
        except (RuntimeError, ConnectionError) as err:
            return str(err)
        except (OSError, ValueError) as err:
            return f"{type(err).__name__}: {err}"
        self.process = ForkedProcess(pid, self.exit_file)
        self.pid = self.pgid = pid  # the child started its own session before the zygote answered
        self.cwd = cwd
        return None

    async def cleanup(self, restart: bool = False) -> None:
        """Also remove the kernel's exit-code file (the zygote then writes none)."""
        await super().cleanup(restart=restart)
        if self.exit_file is not None:
            with suppress(OSError):
                self.exit_file.unlink()


def use_zygote(manager: KernelManager, address: ZygoteAddress) -> None:
    """Make ``manager`` (not started yet) launch its kernel as a fork of the zygote at ``address``."""
    manager.kernel_id = manager.kernel_id or str(uuid.uuid4())
    provisioner = ZygoteProvisioner(kernel_id=manager.kernel_id, kernel_spec=manager.kernel_spec, parent=manager)
    provisioner.address = address
    manager.provisioner = provisioner
