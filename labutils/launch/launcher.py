"""Run code on N local ranks with real ``torch.distributed`` process groups.

Two ways in:

* ``%%torchrun -n 2`` (after ``%load_ext labutils``) runs a notebook cell as a script under
  ``torchrun`` (``python -m torch.distributed.run --standalone``). The cell is a separate program:
  it does **not** see the notebook's variables. It sees ``BACKEND`` (``"gloo"`` or ``"nccl"``),
  ``DEVICE`` (``"cpu"`` or ``"cuda:<local rank>"``) and the simple values named with
  ``--vars SMOKE STEPS`` (numbers, strings, booleans, lists/dicts of them), and it calls
  ``dist.init_process_group(BACKEND)`` itself, as any torchrun script does.
* :func:`launch` calls a function on every rank, with the process group already initialised,
  and returns the per-rank results. Functions from importable modules travel by name; a function
  defined in a notebook travels by source (see :mod:`labutils.launch.ship`).

Both stream each rank's output live as ``[rank k] ...``, turn a failing rank into an exception
carrying that rank's traceback (:class:`RankFailedError`), kill every process of the run on
timeout or KeyboardInterrupt (:class:`LaunchTimeoutError`), set ``OMP_NUM_THREADS=1`` in the
ranks, and delete their temporary files. Ports are never guessed: the rendezvous store binds
port 0, so two runs at once cannot collide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch

from labutils.launch.procs import (
    KERNEL_PID_ENV,
    RUN_ID_ENV,
    FileTail,
    LaunchError,
    LaunchTimeoutError,
    PipeReader,
    PrefixedLines,
    RankFailedError,
    first_rank_error,
    stderr_sink,
    stdout_sink,
    stop_run,
    supervise,
)
from labutils.launch.ship import ShipError, ship
from labutils.launch.specs import CellSpec, FunctionSpec
from labutils.launch.zygote import fork_rank, start_zygote
from labutils.notebook import gpu_count, resolve_device

__all__ = [
    "LaunchError",
    "LaunchTimeoutError",
    "RankFailedError",
    "ShipError",
    "choose_backend",
    "launch",
    "run_cell",
    "warm_up",
]

_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


def choose_backend(backend: str = "auto", device: str = "auto", nproc: int = 2) -> str:
    """``nccl`` when the device is CUDA with one GPU per rank, else ``gloo`` (``auto``); checks explicit picks."""
    backend = backend.lower()
    if backend not in ("auto", "gloo", "nccl"):
        raise ValueError(f"backend must be auto, gloo or nccl, got {backend!r}")
    gpus = gpu_count()
    if backend == "auto":
        return "nccl" if resolve_device(device) == "cuda" and gpus >= nproc else "gloo"
    if backend == "nccl" and gpus < nproc:
        raise ValueError(f"nccl needs one GPU per rank: {nproc} ranks but {gpus} GPU(s)")
    return backend


def base_env() -> dict[str, str]:
    """This process's environment plus what every rank needs: one OpenMP thread, unbuffered output,
    the pid of the process that started the ranks (their watchdog), labutils importable."""
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.setdefault(KERNEL_PID_ENV, str(os.getpid()))
    env["PYTHONPATH"] = os.pathsep.join([_PACKAGE_ROOT, *filter(None, [env.get("PYTHONPATH")])])
    return env


def rank_env(run_id: str, tmp: Path) -> dict[str, str]:
    """Environment of every process of a run: :func:`base_env`, marked with the run id, own TMPDIR."""
    scratch = tmp / "tmp"
    scratch.mkdir(exist_ok=True)
    return {**base_env(), "TMPDIR": str(scratch), RUN_ID_ENV: run_id}


def warm_up() -> None:
    """Start the rank factory of :func:`launch` now, in the background (``%load_ext labutils`` does).

    A no-op where :func:`launch` starts fresh interpreters (not Linux)."""
    if sys.platform == "linux":
        start_zygote(base_env())


def _sys_path() -> list[str]:
    return [entry for entry in sys.path if entry and os.path.isdir(entry)]


def _raise_rank_failure(
    tmp: Path,
    outcome: str,
    timeout: float,
    tails: Mapping[int, PrefixedLines],
    exit_codes: Mapping[int, int | None],
    extra: str = "",
    shown_as: str = "",
) -> None:
    """Raise the error that explains a run that did not end with every rank at exit code 0.

    ``shown_as`` replaces the temporary file's path (``tmp/cell.py`` ...) in the traceback.
    """
    __tracebackhide__ = True
    if outcome == "timeout":
        raise LaunchTimeoutError(f"the ranks did not finish within {timeout:g} s; all of them were killed")
    report = first_rank_error(tmp / "errors")
    if report is not None:
        text = report["traceback"]
        for path in tmp.glob("*.py"):
            text = text.replace(f'"{path}"', shown_as or path.name)
        raise RankFailedError(report["rank"], text, 1)
    bad = [rank for rank, code in exit_codes.items() if code not in (None, 0)]
    rank = bad[0] if bad else None
    shown = [rank] if rank is not None else list(tails)
    output = "".join(f"last output of rank {r}:\n{tails[r].tail}" for r in shown if tails[r].tail)
    raise RankFailedError(
        rank,
        f"no Python exception was reported (a process crashed or aborted).\n{output}{extra}",
        exit_codes.get(rank) if rank is not None else None,
    )


def _forked_first_rank(argv: list[str], env: dict[str, str], folder: Path, procs: list) -> bool:
    """Fork rank 0 from the zygote; False (say why, start every rank cold) when it refuses or is gone."""
    try:
        procs.append(fork_rank(argv, env, folder, 0))
    except (RuntimeError, ConnectionError) as err:
        print(f"labutils.launch: starting ranks cold: {err}", file=sys.stderr)
        return False
    return True


def _fixed(path: Path) -> Callable[[], Path | None]:
    """A FileTail's ``path_of`` for a file whose name is known in advance."""
    return lambda: path


def _start_ranks(
    world_size: int,
    spec: Path,
    env: dict[str, str],
    warm: bool,
    procs: list,
    readers: list[PipeReader | FileTail],
    tails: dict[int, PrefixedLines],
) -> None:
    """Start the ranks (forked by the zygote when ``warm``, else fresh interpreters), filling the lists."""
    for rank in range(world_size):
        argv = ["function", str(spec), str(rank)]
        out, tails[rank] = (
            PrefixedLines(f"[rank {rank}] ", stdout_sink),
            PrefixedLines(f"[rank {rank}] ", stderr_sink),
        )
        if warm and rank == 0:
            warm = _forked_first_rank(argv, env, spec.parent, procs)
        elif warm:
            procs.append(fork_rank(argv, env, spec.parent, rank))
        if warm:
            readers += [
                FileTail(_fixed(spec.parent / f"rank{rank}.out"), out),
                FileTail(_fixed(spec.parent / f"rank{rank}.err"), tails[rank]),
            ]
        else:
            proc = subprocess.Popen(
                [sys.executable, "-m", "labutils.launch.worker", *argv],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
            procs.append(proc)
            readers += [PipeReader(proc.stdout, out), PipeReader(proc.stderr, tails[rank])]


def launch(
    fn: Callable[..., Any],
    world_size: int = 2,
    *args: Any,
    timeout: float = 120.0,
    backend: str = "auto",
    pg_timeout: float = 60.0,
    warm: bool | None = None,
) -> list[Any]:
    """Call ``fn(*args)`` on ``world_size`` local ranks and return their results, rank 0 first.

    Each rank is a separate process whose default process group is already initialised
    (``dist.get_rank()`` works; gloo on CPU, NCCL with one GPU per rank under ``auto``); after
    ``fn`` returns, the ranks meet at a barrier and destroy the group. Arguments and results go
    through ``torch.save`` / ``torch.load(weights_only=True)`` files: use tensors, numbers,
    strings, lists, tuples and dicts. Raises :class:`RankFailedError` with the failing rank's
    traceback, :class:`LaunchTimeoutError` after ``timeout`` seconds (every rank killed).

    ``warm=True`` forks the ranks from a process that has already imported torch
    (:mod:`labutils.launch.zygote`, started on first use): about a second per launch instead of
    an ``import torch`` per rank. ``warm=False`` starts fresh interpreters. The default (None) is
    warm on Linux only (forking after ``import torch`` is not safe on macOS).
    """
    __tracebackhide__ = True
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    warm = sys.platform == "linux" if warm is None else warm
    backend = choose_backend(backend, "auto", world_size)
    run_id = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="labutils-launch-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "results").mkdir()
        target = ship(fn, tmp)
        torch.save(list(args), tmp / "args.pt")
        store = torch.distributed.TCPStore(
            "127.0.0.1", 0, None, True, timedelta(seconds=pg_timeout), wait_for_workers=False
        )
        spec = FunctionSpec(
            target,
            str(tmp / "args.pt"),
            str(tmp / "results"),
            str(tmp / "errors"),
            "127.0.0.1",
            store.port,
            backend,
            world_size,
            pg_timeout,
            _sys_path(),
        ).write(tmp / "spec.json")
        tails: dict[int, PrefixedLines] = {}
        procs: list = []
        readers: list[PipeReader | FileTail] = []
        try:
            _start_ranks(world_size, spec, rank_env(run_id, tmp), warm, procs, readers, tails)
            outcome = supervise(procs, readers, timeout)
        finally:
            stop_run(procs, run_id)
            del store
        for reader in readers:
            reader.finish()
        if outcome != "ok":
            _raise_rank_failure(
                tmp,
                outcome,
                timeout,
                tails,
                {r: p.returncode for r, p in enumerate(procs)},
                shown_as="<shipped notebook code>",
            )
        return [
            torch.load(tmp / "results" / f"rank{rank}.pt", weights_only=True) for rank in range(world_size)
        ]


def _rank_log(logs: Path, local_rank: int, stream: str) -> Callable[[], Path | None]:
    def find() -> Path | None:
        found = sorted(logs.glob(f"*/attempt_*/{local_rank}/{stream}.log"))
        return found[-1] if found else None

    return find


def torchrun_command(nproc: int, spec: Path, logs: Path) -> list[str]:
    """The ``torchrun`` command line: standalone rendezvous on a free port, per-rank log files."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "--max-restarts=0",
        "--monitor-interval=0.1",
        f"--log-dir={logs}",
        "--redirects=3",
        "--module",
        "labutils.launch.worker",
        "cell",
        str(spec),
    ]


def run_cell(
    source: str,
    nproc: int = 2,
    *,
    timeout: float = 300.0,
    backend: str = "auto",
    device: str = "auto",
    variables: Mapping[str, Any] | None = None,
) -> None:
    """Run ``source`` as a script under torchrun on ``nproc`` local ranks (what ``%%torchrun`` does).

    ``variables`` become globals of the script (JSON-serialisable values only), next to
    ``BACKEND`` and ``DEVICE``. Output is streamed as ``[rank k] ...``.
    """
    __tracebackhide__ = True
    backend = choose_backend(backend, device, nproc)
    variables = dict(variables or {})
    try:
        json.dumps(variables)
    except TypeError as exc:
        raise TypeError(f"--vars values must be numbers, strings, booleans, lists or dicts: {exc}") from exc
    run_id = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="labutils-torchrun-") as tmp_name:
        tmp = Path(tmp_name)
        cell = tmp / "cell.py"
        cell.write_text(source)
        spec = CellSpec(str(cell), backend, str(tmp / "errors"), variables, _sys_path()).write(
            tmp / "spec.json"
        )
        logs = tmp / "logs"
        procs: list[subprocess.Popen] = []
        readers: list[FileTail | PipeReader] = []
        tails = {rank: PrefixedLines(f"[rank {rank}] ", stderr_sink) for rank in range(nproc)}
        agent_log = tmp / "torchrun.log"
        try:
            with open(agent_log, "wb") as agent_out:
                procs.append(
                    subprocess.Popen(
                        torchrun_command(nproc, spec, logs),
                        stdout=agent_out,
                        stderr=subprocess.STDOUT,
                        env=rank_env(run_id, tmp),
                        start_new_session=True,
                    )
                )
            for rank in range(nproc):
                readers += [
                    FileTail(_rank_log(logs, rank, "stdout"), PrefixedLines(f"[rank {rank}] ", stdout_sink)),
                    FileTail(_rank_log(logs, rank, "stderr"), tails[rank]),
                ]
            outcome = supervise(procs, readers, timeout)
        finally:
            stop_run(procs, run_id)
        for reader in readers:
            reader.finish()
        if outcome != "ok":
            agent = agent_log.read_text(errors="replace")[-3000:]
            _raise_rank_failure(
                tmp,
                outcome,
                timeout,
                tails,
                {},
                extra=f"torchrun exited with {procs[0].returncode}; its last lines:\n{agent}",
                shown_as="<%%torchrun cell>",
            )
