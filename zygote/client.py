"""Start a zygote, ask it for children, and watch them with a ``subprocess.Popen``-like handle.

A forked child is the zygote's child, not ours: its exit code comes only from the exit file the
zygote's reaper writes. That needs no ``/proc``, which inside a nested pid namespace (the grading
sandbox) can list another namespace's processes under the same numbers.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

from zygote import frames


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (in this pid namespace's view)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Process:
    """What ``subprocess.Popen`` offers beyond ``poll``: waiting and signals (subclasses: ``pid``, ``poll``)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None:
        raise NotImplementedError

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the exit code (raises ``subprocess.TimeoutExpired``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
            time.sleep(0.02)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, signum: int) -> None:
        """Signal the process."""
        with suppress(ProcessLookupError):
            os.kill(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL it."""
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        """SIGTERM it."""
        self.send_signal(signal.SIGTERM)


class ForkedChild(_Process):
    """A child forked by a zygote, with the part of the ``subprocess.Popen`` API launchers use.

    ``server_alive`` says whether the zygote still runs: once it is gone, a child without an exit
    code in its file counts as killed (``-9``).
    """

    stdin = stdout = stderr = None

    def __init__(self, pid: int, exit_file: Path, server_alive: Callable[[], bool]) -> None:
        self.pid = pid
        self.exit_file = exit_file
        self.server_alive = server_alive
        self.returncode: int | None = None

    def _read_exit_code(self) -> int | None:
        try:
            return int(self.exit_file.read_text())
        except (OSError, ValueError):  # not written yet (empty), or no longer wanted (removed)
            return None

    def poll(self) -> int | None:
        """The exit code once the zygote reaped the child (``-9`` if the zygote died first), else None."""
        if self.returncode is None:
            self.returncode = self._read_exit_code()
            if self.returncode is None and not self.server_alive():
                code = self._read_exit_code()  # the zygote may have written it just before it ended
                self.returncode = -9 if code is None else code
        return self.returncode


def request_child(socket_path: str, request: dict[str, Any], timeout: float = 120.0) -> int:
    """Ask the zygote listening on ``socket_path`` to fork a child; its pid.

    Creates the request's (empty) exit file first: the zygote writes only into an existing one. Waits
    while the zygote is still importing (a request waits in the socket's backlog). Raises
    ConnectionError when no zygote serves, RuntimeError when it refuses, TimeoutError.
    """
    try:
        Path(request["exit"]).write_text("")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(socket_path)
            frames.send(sock.fileno(), request)
            reply = frames.receive(sock.fileno(), timeout=timeout)
    except (ConnectionError, FileNotFoundError) as err:
        raise ConnectionError(f"the zygote is not running ({type(err).__name__}: {err})") from err
    if reply is None:
        raise ConnectionError("the zygote is not running (it closed the connection)")
    if "error" in reply:
        raise RuntimeError(f"the zygote refused to fork: {reply['error']}")
    return int(reply["pid"])


class ServerProcess(_Process):
    """The ``subprocess.Popen``-like handle of a zygote forked from this process (its parent)."""

    def __init__(self, pid: int, stdin_fd: int) -> None:
        self.pid = pid
        self.stdin = os.fdopen(stdin_fd, "wb")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """Its exit code once it ended, else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: it is gone
                self.returncode = -9
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class Zygote:
    """A zygote process serving a listening socket in a private folder, started with :meth:`start`.

    The socket is bound before the zygote imports anything, so early requests wait in its backlog;
    the zygote exits when :meth:`stop` closes its stdin (or this process dies).
    """

    def __init__(self, folder: Path, proc: subprocess.Popen | ServerProcess) -> None:
        self.folder = folder
        self.proc = proc

    @property
    def socket_path(self) -> str:
        """Where the zygote listens."""
        return str(self.folder / "socket")

    @classmethod
    def start(
        cls,
        target: str,
        preload: Sequence[str],
        env: dict[str, str],
        *,
        folder: Path | None = None,
        name: str = "zygote",
        stderr: int | IO[Any] | None = None,
    ) -> Zygote:
        """Start ``python -m zygote.server`` whose children call ``target`` (``module:function``)."""

        def spawn(listener: socket.socket) -> subprocess.Popen:
            command = [
                sys.executable,
                "-m",
                "zygote.server",
                "--fd",
                str(listener.fileno()),
                "--target",
                target,
                "--name",
                name,
                "--preload",
                *preload,
            ]
            return subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=env,
                pass_fds=(listener.fileno(),),
                start_new_session=True,
            )

        return cls._serving(folder, spawn)

    @classmethod
    def forked(
        cls,
        target: str,
        preload: Sequence[str],
        env: dict[str, str],
        *,
        folder: Path | None = None,
        name: str = "zygote",
    ) -> Zygote:
        """Like :meth:`start`, but forked from this process (:func:`zygote.server.fork_server`): no
        interpreter start-up, and only what this process has not imported yet to import. Raises
        :class:`zygote.server.ForkRefused` where this process may not fork."""
        from zygote.server import fork_server

        return cls._serving(
            folder, lambda listener: ServerProcess(*fork_server(listener, target, preload, env, name))
        )

    @classmethod
    def _serving(
        cls, folder: Path | None, launch: Callable[[socket.socket], subprocess.Popen | ServerProcess]
    ) -> Zygote:
        """A private folder and a listening socket in it, handed to the zygote ``launch`` starts."""
        folder = Path(folder or tempfile.mkdtemp(prefix="zygote-"))
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(folder / "socket"))
            listener.listen(64)
            proc = launch(listener)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        finally:
            listener.close()  # the zygote holds the only copy: if it dies, requests fail at once
        return cls(folder, proc)

    def alive(self) -> bool:
        """Whether the zygote process still runs."""
        return self.proc.poll() is None

    def fork(self, request: dict[str, Any], timeout: float = 120.0) -> ForkedChild:
        """A child for ``request`` (its ``exit`` defaults to a file in the zygote's folder)."""
        request = {"exit": str(self.folder / f"child-{time.monotonic_ns()}.exit"), **request}
        pid = request_child(self.socket_path, request, timeout)
        return ForkedChild(pid, Path(request["exit"]), self.alive)

    def stop(self) -> None:
        """Close the zygote's stdin (it exits on EOF), kill it if it lingers, remove its folder."""
        with suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
