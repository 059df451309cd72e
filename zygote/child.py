"""The one set-up every child forked from a warm process goes through, before it runs its target.

A forked child must look like a freshly started process: its own session (a process group that is
killed as one), stdin from /dev/null, stdout and stderr where the request says (else the zygote's
stderr), the request's environment and working folder, and random state of its own. ``random``
reseeds itself at fork, but torch's CPU generator was seeded from the OS once, at import in the
zygote, and numpy's global generator likewise: without :func:`reseed` every child would draw the
same "random" numbers, unlike processes started cold.
"""

from __future__ import annotations

import atexit
import os
import random
import signal
import sys
from collections.abc import Callable, Iterable
from typing import Any


def reseed() -> None:
    """Fresh random state from the OS for ``random``, torch's CPU generator and numpy's global one.

    Only modules already imported are touched (CUDA's generators are created after the fork).
    """
    random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.default_generator.seed()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()


def close_all_but(keep: set[int]) -> None:
    """Close every inherited descriptor not in ``keep`` (other jobs' pipes, the parent's streams)."""
    edges = sorted(k for k in keep if k >= 0)
    low = 0
    for fd in [*edges, 65536]:
        if low < fd:  # closerange(n, n) would close everything: it becomes close_range(n, n - 1)
            os.closerange(low, fd)
        low = fd + 1


def _point_stdio(stdout: str | None, stderr: str | None) -> None:
    """stdin from /dev/null; fds 1 and 2 appended to the given files (fd 1 defaults to fd 2)."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    for fd, path in ((1, stdout), (2, stderr)):
        if path:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(target, fd)
            os.close(target)
        elif fd == 1:
            os.dup2(2, 1)  # the zygote's stdout is not a child's to write on
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # line-buffered, as a terminal's
    sys.stderr = open(2, "w", buffering=1, closefd=False)


def _exit_code(exc: SystemExit) -> int:
    if isinstance(exc.code, int):
        return exc.code
    return 0 if exc.code is None else 1


def become(
    request: dict[str, Any],
    target: Callable[[list[str]], object],
    close_fds: Iterable[int] = (),
    started_fd: int | None = None,
) -> None:
    """In a freshly forked child: set it up as a new process, run ``target(request["argv"])``; never return.

    Closing ``started_fd`` tells the zygote the child has its own session. The exit code is 0 when
    the target returns, its ``SystemExit`` code, or 1 after printing any other exception.
    """
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in close_fds:
            os.close(fd)
        os.setsid()
        if started_fd is not None:
            os.close(started_fd)
        _point_stdio(request.get("stdout"), request.get("stderr"))
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        reseed()
        target(list(request["argv"]))
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # noqa: BLE001 (report it; never return into the zygote)
        import traceback

        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()  # what a normal interpreter exit would run
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
