"""Kernels forked from the zygote (:mod:`labs.run.kernel_child`): start it, ask it for kernels, watch them.

:func:`kernel_zygote` starts one zygote per ``labs run`` with the kernels' environment.
:class:`ZygoteProvisioner` is jupyter_client's local provisioner with one change: ``launch_kernel``
asks the zygote for a forked kernel instead of running ``python -m ipykernel_launcher``, and falls back
to that cold launch, saying so once per runner process, when the zygote cannot serve (it failed to
start or to import, it refuses to fork, or the kernel's command or environment is not the zygote's).
Set ``LABS_ZYGOTE=0`` to start every kernel cold.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_client import KernelManager
from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

from labs.run import kernel_child
from zygote.client import ForkedChild, Zygote, pid_alive, request_child

SWITCH = "LABS_ZYGOTE"
# Variables a kernel's launch sets on top of the run's environment; anything else must match the zygote's.
LAUNCH_VARIABLES = ("JPY_", "PYTHONEXECUTABLE")
POPEN_OPTIONS = {"env", "cwd", "kernel_id", "extra_arguments"}
KERNEL_LOG_ENV = "LABS_KERNEL_LOG"


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
    """The zygote's folder (its socket, its kernels' exit codes), its pid and the environment it imported under."""

    folder: str
    env: dict[str, str]
    pid: int = 0

    @property
    def socket(self) -> str:
        return os.path.join(self.folder, "socket")

    def alive(self) -> bool:
        """Whether the zygote still runs (a kernel without an exit code then still runs too)."""
        return self.pid > 0 and pid_alive(self.pid)


def zygote_env(env: dict[str, str]) -> dict[str, str]:
    """The kernels' environment as a launch would give it (jupyter_client drops PYTHONEXECUTABLE)."""
    return {key: value for key, value in env.items() if not key.startswith(LAUNCH_VARIABLES)}


@contextmanager
def kernel_zygote(env: dict[str, str]) -> Iterator[ZygoteAddress | None]:
    """Run a zygote for the duration of the block; None when disabled or when it could not start."""
    if os.environ.get(SWITCH) == "0":
        yield None
        return
    folder = runtime_dir() / f"zygote-{uuid.uuid4().hex[:12]}"
    try:
        zygote = Zygote.start(
            kernel_child.TARGET,
            kernel_child.PRELOAD,
            zygote_env(env),
            folder=folder,
            name="labs run: kernel zygote",
        )
    except OSError as err:
        say(f"starting kernels cold: the kernel zygote did not start ({type(err).__name__}: {err})")
        yield None
        return
    try:
        yield ZygoteAddress(str(folder), zygote_env(env), zygote.proc.pid)
    finally:
        zygote.stop()


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
        request = {
            "argv": cmd[3:],
            "env": kwargs.get("env", dict(os.environ)),
            "cwd": cwd,
            "exit": str(self.exit_file),
        }
        log = request["env"].get(KERNEL_LOG_ENV)
        if log:  # what C++ libraries print on fds 1 and 2 (the profiler's USDT lines), not the terminal
            request["stdout"] = request["stderr"] = log
        try:
            pid = request_child(self.address.socket, request)
        except (RuntimeError, ConnectionError, TimeoutError) as err:
            return str(err)
        except (OSError, ValueError) as err:
            return f"{type(err).__name__}: {err}"
        self.process = ForkedChild(pid, self.exit_file, self.address.alive)  # type: ignore[assignment]  # Popen's API
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
    provisioner = ZygoteProvisioner(
        kernel_id=manager.kernel_id, kernel_spec=manager.kernel_spec, parent=manager
    )
    provisioner.address = address
    manager.provisioner = provisioner
