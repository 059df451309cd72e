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

from labutils.launch.procs import KERNEL_PID_ENV, RUN_ID_ENV
from zygote.client import ForkedChild, Zygote
from zygote.server import ForkRefused

PRELOAD = (
    "torch",
    "torch.nn",
    "torch.distributed",
    "torch.nn.parallel",
    "torch.utils.data",
    "torch._dynamo",
    "torch.distributed.fsdp",
    "torch.distributed.tensor",
    "torch.distributed.algorithms.ddp_comm_hooks.default_hooks",
    "labutils.launch.worker",
    "labutils.digits",
)  # the course model: ranks of chapter 04 train it (its sklearn import is 1.5 s)
TARGET = "labutils.launch.worker:main"
NAME = "labutils.launch: rank zygote"
ZYGOTE_ENV = "LABUTILS_ZYGOTE"


class _Factory:
    lock = threading.Lock()
    zygote: Zygote | None = None


def zygote_pid() -> int | None:
    """Pid of this process's zygote, if one is running."""
    zygote = _Factory.zygote
    return zygote.proc.pid if zygote is not None and zygote.alive() else None


def _zygote_env(env: dict[str, str]) -> dict[str, str]:
    """The zygote's own environment: the ranks', less what is per run, single-threaded."""
    env = {key: value for key, value in env.items() if key not in ("TMPDIR", RUN_ID_ENV)}
    env.setdefault(KERNEL_PID_ENV, str(os.getpid()))
    env.update({ZYGOTE_ENV: "1", "OMP_NUM_THREADS": "1"})
    return env


def _new_folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="labutils-zygote-"))


def _adopt(zygote: Zygote) -> Zygote:
    if _Factory.zygote is not None:
        shutil.rmtree(_Factory.zygote.folder, ignore_errors=True)
    _Factory.zygote = zygote
    atexit.register(zygote.stop)
    return zygote


def _ensure_started(env: dict[str, str]) -> Zygote:
    """Start the zygote unless one is alive (call with the lock held); does not wait for it."""
    zygote = _Factory.zygote
    if zygote is None or not zygote.alive():
        zygote = _adopt(Zygote.start(TARGET, PRELOAD, _zygote_env(env), folder=_new_folder(), name=NAME))
    return zygote


def fork_zygote_here(env: dict[str, str]) -> bool:
    """Fork the zygote from this process now, if that is safe; whether it runs.

    For a process that is itself a fresh fork of a warm one, before any code of its own ran (a grading
    job before its first cell, :mod:`graders.inside.zygote`): ranks then cost no interpreter start-up.
    Where this process may not fork (threads, CUDA) nothing happens: the first launch starts one cold.
    """
    with _Factory.lock:
        if _Factory.zygote is not None and _Factory.zygote.alive():
            return True
        try:
            _adopt(Zygote.forked(TARGET, PRELOAD, _zygote_env(env), folder=_new_folder(), name=NAME))
        except ForkRefused:  # the folder went with it
            return False
        return True


def start_zygote(env: dict[str, str]) -> None:
    """Start the zygote in the background (it imports torch while the caller goes on)."""
    with _Factory.lock:
        _ensure_started(env)


def fork_rank(
    argv: list[str], env: dict[str, str], folder: Path, rank: int, timeout: float = 300.0
) -> ForkedChild:
    """Ask the zygote (started on first use) for a rank running ``labutils.launch.worker.main(argv)``.

    Its output goes to ``folder/rank<k>.out`` / ``.err`` and its exit code to ``folder/rank<k>.exit``.
    Raises RuntimeError when the zygote refuses to fork (it says why), ConnectionError when it died.
    """
    with _Factory.lock:
        zygote = _ensure_started(env)
    paths = {kind: str(folder / f"rank{rank}.{kind}") for kind in ("out", "err", "exit")}
    request = {
        "argv": argv,
        "env": env,
        "cwd": os.getcwd(),
        "stdout": paths["out"],
        "stderr": paths["err"],
        "exit": paths["exit"],
    }
    return zygote.fork(request, timeout)
