"""A zygote: import what children need once, then fork one child per request, safely.

Forking is safe only from a single-threaded process that has not touched CUDA, so a zygote

* imports its modules with :func:`preload`, which stops the worker threads numpy's OpenBLAS starts
  at import (a child restarts them, same size, on first use) and never runs torch code;
* forks only through :func:`fork_checked`, which refuses when :func:`fork_hazard` finds more than
  one thread or CUDA (torch's CUDA state, or the driver library) in the process.

:func:`serve` answers requests on an inherited, listening Unix socket: each connection carries one
request message and gets one reply, ``{"pid": N}`` once the child has its own session (its pid is
its process group's), or ``{"error": why}``. A request holds ``argv``, ``env``, ``cwd``, ``exit``
(a file the client created empty; the reaper writes the child's exit code into it, and writes
nothing once the client removed it) and optionally ``stdout``/``stderr`` paths. The zygote exits
when its stdin closes (whoever started it is gone).

Run as ``python -m zygote.server --fd N --target MODULE:FUNCTION [--preload M ...]``: each child
calls ``FUNCTION(argv)`` after :func:`zygote.child.become`'s set-up.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import os
import select
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable

from zygote import child, frames

Target = Callable[[list[str]], object]


class ForkRefused(RuntimeError):
    """Forking now would be unsafe; the message says why."""


def loaded_libraries(fragment: str) -> list[str]:
    """Paths of the shared libraries mapped into this process whose file name contains ``fragment``."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/"):
                paths.add(fields[5].rstrip("\n"))
    return sorted(p for p in paths if fragment in os.path.basename(p))


def stop_blas_threads() -> None:
    """Join the worker threads numpy's OpenBLAS started at import (as its own fork handler does)."""
    for path in loaded_libraries("openblas"):
        shutdown = getattr(ctypes.CDLL(path), "blas_thread_shutdown_", None)
        if shutdown is not None:
            shutdown()


def thread_count() -> int:
    """Threads of this process, native ones included (``threading`` sees only Python's)."""
    return len(os.listdir("/proc/self/task"))


def _import_quietly(names: Iterable[str], required: bool) -> list[str]:
    """Import ``names``; the ones that failed (``required``: raise at the first failure instead).

    Raises :class:`ForkRefused` naming the module whose import left a thread running: no fork is safe
    after that, and a thread cannot be un-imported (leave that module to the children).
    """
    failed = []
    for name in names:
        before = set(sys.modules)
        try:
            importlib.import_module(name)
        except Exception:
            if required:
                raise
            failed.append(name)
            for partial in set(sys.modules) - before:  # a half-imported module would break every child
                del sys.modules[partial]
        if thread_count() > 1:
            stop_blas_threads()
        if not settled():
            raise ForkRefused(f"importing {name} started a thread: a zygote must not preload it")
    return failed


def settled(timeout: float = 2.0) -> bool:
    """Whether this process is down to one thread, waiting up to ``timeout`` s for short-lived ones
    (an import may start a thread that ends a moment later) to end."""
    deadline = time.monotonic() + timeout
    while thread_count() > 1:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def preload(names: Iterable[str], required: bool = True) -> list[str]:
    """Import what every child needs, then return to a single thread; the names that failed to import.

    What the imports print on stderr (debugpy warns about frozen modules) is held back and shown only
    when a required import fails: a cold child would print it on its own output, not the zygote's.
    With ``required=False`` a module that fails is left out (it only costs a child time later).
    """
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            failed = _import_quietly(names, required)
        except BaseException:
            sys.stderr.flush()
            held.seek(0)
            os.write(saved, held.read())
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
    stop_blas_threads()
    return failed


def fork_hazard() -> str | None:
    """Why forking this process now would be unsafe, or None when it is safe (a short-lived thread
    is given a second to end)."""
    settled(timeout=1.0)
    threads = thread_count()
    if threads != 1 or threading.active_count() != 1:
        return f"{threads} threads running (a fork must happen single-threaded)"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA was initialised in the zygote"
    if loaded_libraries("libcuda.so"):
        return "the CUDA driver is loaded in the zygote"
    return None


def fork_checked() -> int:
    """``os.fork()`` after :func:`fork_hazard` found it safe; raises :class:`ForkRefused` otherwise."""
    hazard = fork_hazard()
    if hazard:
        raise ForkRefused(hazard)
    return os.fork()


class Reaper:
    """Collects finished children and writes each exit code into the file its client created."""

    def __init__(self) -> None:
        self.exit_files: dict[int, str] = {}

    def adopt(self, pid: int, exit_file: str) -> None:
        """Write ``pid``'s exit code into ``exit_file`` when it ends."""
        self.exit_files[pid] = exit_file

    def reap(self) -> None:
        """Collect every child that has ended (never blocks)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            path = self.exit_files.pop(pid, None)
            if path is not None:
                write_if_claimed(path, str(os.waitstatus_to_exitcode(status)))


def write_if_claimed(path: str, text: str) -> None:
    """Write into the (empty) file a client created; nothing if the client removed it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except OSError:
        return  # nobody waits for this child any more
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


REQUIRED = {"argv", "env", "cwd", "exit"}


def _fork_with_pipe() -> tuple[int, int, int]:
    """A new pipe, then :func:`fork_checked`: (pid, read end, write end); no pipe is left when it refuses."""
    read_end, write_end = os.pipe()
    try:
        return fork_checked(), read_end, write_end
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise


def _fork_child(request: frames.Message, target: Target, reaper: Reaper, inherited: tuple[int, ...]) -> int:
    """Fork a child for ``request``; its pid, once it has its own session."""
    missing = REQUIRED - request.keys()
    if missing:
        raise KeyError(f"request lacks {sorted(missing)}")
    pid, started_r, started_w = _fork_with_pipe()
    if pid == 0:
        child.become(request, target, close_fds=(*inherited, started_r), started_fd=started_w)
    reaper.adopt(pid, request["exit"])
    os.close(started_w)
    os.read(started_r, 1)  # EOF once the child has called setsid (or died)
    os.close(started_r)
    return pid


def _answer(conn: socket.socket, target: Target, reaper: Reaper, inherited: tuple[int, ...]) -> None:
    """Fork a child for one connection's request and reply with its pid, or why not; never raise."""
    try:
        request = frames.receive(conn.fileno(), timeout=10)
        if request is None:
            return
        reply: frames.Message = {"pid": _fork_child(request, target, reaper, (*inherited, conn.fileno()))}
    except (OSError, ValueError, KeyError, ForkRefused) as err:
        reply = {"error": str(err) if isinstance(err, ForkRefused) else f"{type(err).__name__}: {err}"}
    try:
        frames.send(conn.fileno(), reply)
    except OSError:
        pass  # the client gave up; a child it did not hear of exits with the zygote


def _drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 512):
                return
        except BlockingIOError:
            return


def serve(listener: socket.socket, target: Target) -> None:
    """Fork one child per connection on ``listener`` until stdin closes."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    reaper = Reaper()
    while True:
        try:
            ready, _, _ = select.select([0, wake_r, listener.fileno()], [], [], 1.0)
        except InterruptedError:
            continue
        if wake_r in ready:
            _drain(wake_r)
        reaper.reap()
        if 0 in ready and not os.read(0, 4096):
            return  # whoever started the zygote is gone
        if listener.fileno() in ready:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                _answer(conn, target, reaper, (listener.fileno(), wake_r, wake_w))


def fork_server(
    listener: socket.socket, target: str, names: Iterable[str], env: dict[str, str], name: str = "zygote"
) -> tuple[int, int]:
    """Fork a zygote from this process, serving ``listener`` like ``python -m zygote.server`` would:
    (its pid, the write end of its stdin; it exits when that closes).

    For a process that is itself a fresh fork of a warm one (a grading job before its first cell): the
    zygote then starts without an interpreter's start-up and imports. Raises :class:`ForkRefused`
    where forking this process is not safe (start one with ``python -m zygote.server`` instead).
    """
    pid, stdin_r, stdin_w = _fork_with_pipe()
    if pid == 0:
        _become_server(listener, stdin_r, target, names, env, name)
    os.close(stdin_r)
    return pid, stdin_w


def _become_server(
    listener: socket.socket, stdin_r: int, target: str, names: Iterable[str], env: dict[str, str], name: str
) -> None:
    """In a child of :func:`fork_server`: a session of its own, nothing of the parent's descriptors, serve."""
    code = 0
    try:
        os.setsid()
        os.dup2(stdin_r, 0)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        child.close_all_but({0, 1, 2, listener.fileno()})
        os.environ.clear()
        os.environ.update(env)
        preload(names)
        serve(listener, resolve(target))
    except BaseException as err:  # noqa: BLE001 (say why in one line; clients start their children cold)
        os.write(2, f"{name} could not start: {type(err).__name__}: {err}\n".encode())
        code = 1
    os._exit(code)


def resolve(spec: str) -> Target:
    """``"package.module:function"`` as the function."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str] | None = None) -> None:
    """Entry point: preload, then serve the inherited listening socket."""
    parser = argparse.ArgumentParser(description="Fork one child per request from a warm process.")
    parser.add_argument("--fd", type=int, required=True, help="inherited listening Unix socket")
    parser.add_argument("--target", required=True, help="MODULE:FUNCTION each child calls with its argv")
    parser.add_argument("--preload", nargs="*", default=[], help="modules to import before serving")
    parser.add_argument("--name", default="zygote", help="how the zygote names itself in its one error line")
    args = parser.parse_args(argv)
    del sys.path[0]  # the folder `-m` added; a cold child's interpreter would not have it either
    listener = socket.socket(fileno=args.fd)
    try:
        preload(args.preload)
        target = resolve(args.target)
    except Exception as err:  # noqa: BLE001 (say why in one line; clients start their children cold)
        print(f"{args.name} could not preload: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(1)
    serve(listener, target)


if __name__ == "__main__":
    main()
