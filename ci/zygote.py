"""The kernel zygote: one process imports torch and ipykernel once, then forks a fresh kernel per request.

A cold kernel costs a new interpreter, ipykernel's imports and ``import torch`` (2-3 s of CPU). The
zygote pays that once per ``labs run``; each kernel is then a ``fork()`` that starts an
``IPKernelApp`` on its connection file. It is a fresh process all the same: nothing a notebook does
reaches the zygote or another kernel.

Forking is safe only from a single-threaded process that has not touched CUDA, so the zygote

* is started by :mod:`ci.forked` with the kernels' own environment, so whatever torch, numpy and
  OpenMP read from it at import time is what a cold kernel would read;
* never runs torch code (no intra-op/inter-op pool, no CUDA); numpy's OpenBLAS starts its worker
  threads at import, and the zygote stops them again (a kernel restarts them, same size, on first use);
* checks before every fork that it has exactly one thread and that neither torch's CUDA state nor
  the CUDA driver is loaded, and refuses the request otherwise (the client then starts the kernel cold).

Each child starts a new session (its own process group, killed as one), takes the request's
environment and working folder, points its stdin at /dev/null and its stdout at the zygote's stderr,
and runs ipykernel exactly as ``python -m ipykernel_launcher -f CONNECTION_FILE`` would. The zygote
reaps its children and writes each exit code into the file named in the request, which the client
creates empty and removes when it no longer needs it (then nothing is written). It exits when its
stdin closes (the ``labs run`` that started it is gone); kernels then exit through ipykernel's
parent poller, which watches the zygote (``JPY_PARENT_PID``).

Run as ``python -m ci.zygote --fd N``, where N is an inherited, listening Unix socket.
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import importlib
import importlib.util
import json
import logging
import os
import select
import signal
import socket
import sys
import tempfile
import threading
from typing import Any

# What a kernel imports before running the first cell: the prelude's torch and labutils, and what
# ipykernel loads while starting (its debugger's debugpy is half of that). Not matplotlib: it reads
# MPLBACKEND at import, which ipykernel sets only in the kernel.
PRELOAD = ("torch", "labutils", "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell",
           "ipykernel.debugger", "IPython.core.completer", "IPython.core.completerlib",
           "IPython.core.debugger", "IPython.core.oinspect", "IPython.extensions.storemagic",
           "tornado.platform.asyncio", "tornado.queues", "tornado.locks", "sqlite3", "jupyter_client.session")

# --- preload and safety ------------------------------------------------------------------------


def _loaded_libraries(fragment: str) -> list[str]:
    """Paths of the shared libraries mapped into this process whose file name contains ``fragment``."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/"):
                paths.add(fields[5].rstrip("\n"))
    return sorted(p for p in paths if fragment in os.path.basename(p))


def _stop_blas_threads() -> None:
    """Join the worker threads numpy's OpenBLAS started at import (as its own fork handler does)."""
    for path in _loaded_libraries("openblas"):
        shutdown = getattr(ctypes.CDLL(path), "blas_thread_shutdown_", None)
        if shutdown is not None:
            shutdown()


# Log handlers the preloaded modules created on the zygote's stdout/stderr (torch makes dozens). A cold
# kernel creates them after ipykernel has replaced sys.stdout/sys.stderr, so each kernel rebinds them.
_stream_handlers: list[logging.StreamHandler] = []


def _console_handlers() -> set[logging.StreamHandler]:
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    return {handler for logger in loggers for handler in getattr(logger, "handlers", ())
            if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stdout, sys.stderr)}


def preload() -> None:
    """Import what every kernel needs, then return to a single thread.

    What the imports print (debugpy warns about frozen modules) is held back, and shown only if one
    fails: a cold kernel prints it on its own output channel, not on ``labs run``'s terminal.
    """
    before = _console_handlers()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            for name in PRELOAD:
                importlib.import_module(name)
        except BaseException:
            sys.stderr.flush()
            held.seek(0)
            os.write(saved, held.read())
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
    _stream_handlers.extend(_console_handlers() - before)
    _stop_blas_threads()


def fork_hazard() -> str | None:
    """Why forking this process now would be unsafe, or None when it is safe."""
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1 or threading.active_count() != 1:
        return f"{threads} threads running (a fork must happen single-threaded)"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA was initialised in the zygote"
    if _loaded_libraries("libcuda.so"):
        return "the CUDA driver is loaded in the zygote"
    return None


# --- the forked kernel -------------------------------------------------------------------------


def _redirect_stdio() -> None:
    """stdin from /dev/null; stdout to the zygote's stderr (fd 1 is not a kernel's to write on)."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)


KERNEL_LOG_ENV = "LABS_KERNEL_LOG"


def _log_native_output(path: str) -> None:
    """fds 1 and 2 (what C++ libraries print: the profiler's USDT lines) appended to ``path``, not to
    `labs run`'s terminal; Python's own output still reaches the notebook."""
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        return  # the terminal, then: better than no kernel
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)


def _reseed() -> None:
    """Give the kernel its own random state, as a new process has (``random`` reseeds itself at fork).

    torch seeds its CPU generator from the OS at import, numpy its global generator on first use;
    CUDA's generators are created in the kernel, after the fork.
    """
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.default_generator.seed()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()


def _start_ipykernel(argv: list[str]) -> None:
    """What ``python -m ipykernel_launcher ARGV`` does once its imports are done.

    IPKernelApp read JPY_PARENT_PID and JPY_INTERRUPT_EVENT when the zygote imported it, so they are
    passed explicitly; log handlers made at import move to the kernel's streams once it has them.
    """
    spec = importlib.util.find_spec("ipykernel_launcher")
    sys.argv = [spec.origin if spec and spec.origin else "ipykernel_launcher", *argv]
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance(parent_handle=int(os.environ.get("JPY_PARENT_PID") or 0),
                               interrupt=int(os.environ.get("JPY_INTERRUPT_EVENT") or 0))
    app.initialize()
    for handler in _stream_handlers:  # log records go to the notebook, as in a cold kernel
        handler.setStream(sys.stderr if handler.stream is sys.__stderr__ else sys.stdout)
    app.start()


def _become_kernel(request: dict[str, Any], listener: socket.socket, conn: socket.socket,
                   close_fds: tuple[int, ...], started_fd: int) -> None:
    """In the forked child: detach, take the request's environment and folder, run the kernel; never return.

    Closing ``started_fd`` tells the zygote the child has its own session (and process group).
    """
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        listener.close()
        conn.close()
        for fd in close_fds:
            os.close(fd)
        os.setsid()
        os.close(started_fd)
        _redirect_stdio()
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ["JPY_PARENT_PID"] = str(os.getppid())  # ipykernel exits when the zygote does
        os.chdir(request["cwd"])
        if os.environ.get(KERNEL_LOG_ENV):
            _log_native_output(os.environ[KERNEL_LOG_ENV])
        _reseed()
        _start_ipykernel(request["argv"])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 (anything else: report it, never return into the zygote)
        import traceback

        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()  # what a normal interpreter exit would run
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


# --- the server --------------------------------------------------------------------------------


def _write_if_claimed(path: str, text: str) -> None:
    """Write an exit code into the (empty) file the client created; skip it if the client removed it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except OSError:
        return  # nobody waits for this kernel any more
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _reap(exit_files: dict[int, str]) -> None:
    """Collect finished kernels and write their exit codes where their clients look for them."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        path = exit_files.pop(pid, None)
        if path is not None:
            _write_if_claimed(path, str(os.waitstatus_to_exitcode(status)))


def _read_request(conn: socket.socket) -> dict[str, Any]:
    conn.settimeout(10)
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("client closed the connection before its request")
        data += chunk
    return json.loads(data)


def _fork_kernel(request: dict[str, Any], listener: socket.socket, conn: socket.socket,
                 wake_fds: tuple[int, int], exit_files: dict[int, str]) -> int:
    """Fork a kernel for ``request``; its pid, once it has its own session (its pid is its group's)."""
    missing = {"argv", "env", "cwd", "exit"} - request.keys()
    if missing:
        raise KeyError(f"request lacks {sorted(missing)}")
    started_r, started_w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(started_r)
        os.close(started_w)
        raise
    if pid == 0:
        _become_kernel(request, listener, conn, (*wake_fds, started_r), started_w)
    exit_files[pid] = request["exit"]
    os.close(started_w)
    os.read(started_r, 1)  # EOF once the child has called setsid (or died)
    os.close(started_r)
    return pid


def _answer(conn: socket.socket, listener: socket.socket, wake_fds: tuple[int, int],
            exit_files: dict[int, str]) -> None:
    """Fork a kernel for one request and reply with its pid, or reply why not; never raise."""
    try:
        request = _read_request(conn)
        hazard = fork_hazard()
        reply = {"error": hazard} if hazard else {"pid": _fork_kernel(request, listener, conn, wake_fds, exit_files)}
    except (OSError, ValueError, KeyError) as err:
        reply = {"error": f"{type(err).__name__}: {err}"}
    try:
        conn.sendall(json.dumps(reply).encode() + b"\n")
    except OSError:
        pass  # the client gave up; a kernel it did not hear of exits with the zygote


def _drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 512):
                return
        except BlockingIOError:
            return


def serve(listener: socket.socket) -> None:
    """Fork one kernel per connection on ``listener`` until stdin closes."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_files: dict[int, str] = {}
    while True:
        try:
            ready, _, _ = select.select([0, wake_r, listener], [], [], 1.0)
        except InterruptedError:
            continue
        if wake_r in ready:
            _drain(wake_r)
        _reap(exit_files)
        if 0 in ready and not os.read(0, 4096):
            return  # labs run is gone
        if listener in ready:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                _answer(conn, listener, (wake_r, wake_w), exit_files)


def main() -> None:
    """Entry point: preload, then serve the inherited listening socket."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fd", type=int, required=True, help="inherited listening Unix socket")
    args = parser.parse_args()
    del sys.path[0]  # the folder `-m` added; a cold kernel's launcher removes it too
    listener = socket.socket(fileno=args.fd)
    try:
        preload()
    except Exception as err:  # noqa: BLE001 (say why in one line; clients start kernels cold)
        print(f"labs run: kernel zygote could not preload: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(1)
    serve(listener)


if __name__ == "__main__":
    main()
