"""A warm rank factory: one process imports torch once, then forks a fresh rank per request.

Starting a rank with ``python -m ...`` costs an ``import torch`` (3 s on an idle 2-core machine,
much more on a loaded one), and DDP's constructor imports ``torch._dynamo`` (2-3 s more). The
*zygote* (:mod:`zygote.server`, one per kernel, ``OMP_NUM_THREADS=1`` so it stays single-threaded)
pays this once: it preloads :data:`PRELOAD`, then forks a rank per request, after the core's
fork-safety check. Each rank is set up by :func:`zygote.child.become` like a fresh process (own
session, its stdout/stderr in files the launcher tails, the request's environment, random state of
its own) and runs :func:`labutils.launch.worker.main`. The zygote exits when this process closes its
stdin (it died), and a rank whose zygote disappears exits through its watchdog.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

from labutils.launch.procs import KERNEL_PID_ENV
from zygote.client import ForkedChild, Zygote

PRELOAD = ("torch", "torch.nn", "torch.distributed", "torch.nn.parallel", "torch.utils.data", "torch._dynamo",
           "torch.distributed.fsdp", "torch.distributed.tensor",
           "torch.distributed.algorithms.ddp_comm_hooks.default_hooks", "labutils.launch.worker")
TARGET = "labutils.launch.worker:main"
ZYGOTE_ENV = "LABUTILS_ZYGOTE"


class _Factory:
    lock = threading.Lock()
    zygote: Zygote | None = None


def zygote_pid() -> int | None:
    """Pid of this process's zygote, if one is running."""
    zygote = _Factory.zygote
    return zygote.proc.pid if zygote is not None and zygote.alive() else None


def _ensure_started(env: dict[str, str]) -> Zygote:
    """Start the zygote unless one is alive (call with the lock held); does not wait for it."""
    if _Factory.zygote is None or not _Factory.zygote.alive():
        if _Factory.zygote is not None:
            shutil.rmtree(_Factory.zygote.folder, ignore_errors=True)
        env = {key: value for key, value in env.items() if key not in ("TMPDIR", "LABUTILS_RUN_ID")}
        env.setdefault(KERNEL_PID_ENV, str(os.getpid()))
        env.update({ZYGOTE_ENV: "1", "OMP_NUM_THREADS": "1"})
        folder = Path(tempfile.mkdtemp(prefix="labutils-zygote-"))
        _Factory.zygote = Zygote.start(TARGET, PRELOAD, env, folder=folder, name="labutils.launch: rank zygote")
        atexit.register(_Factory.zygote.stop)
    return _Factory.zygote


def start_zygote(env: dict[str, str]) -> None:
    """Start the zygote in the background (it imports torch while the caller goes on)."""
    with _Factory.lock:
        _ensure_started(env)


def fork_rank(argv: list[str], env: dict[str, str], folder: Path, rank: int, timeout: float = 300.0) -> ForkedChild:
    """Ask the zygote (started on first use) for a rank running ``labutils.launch.worker.main(argv)``.

    Its output goes to ``folder/rank<k>.out`` / ``.err`` and its exit code to ``folder/rank<k>.exit``.
    Raises RuntimeError when the zygote refuses to fork (it says why), ConnectionError when it died.
    """
    with _Factory.lock:
        zygote = _ensure_started(env)
    paths = {kind: str(folder / f"rank{rank}.{kind}") for kind in ("out", "err", "exit")}
    request = {"argv": argv, "env": env, "cwd": os.getcwd(), "stdout": paths["out"], "stderr": paths["err"],
               "exit": paths["exit"]}
    return zygote.fork(request, timeout)
