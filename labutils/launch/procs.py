"""Process plumbing for :mod:`labutils.launch`: errors, prefixed live output, stopping a whole run.

Every process a run starts carries the environment variable ``LABUTILS_RUN_ID``; stopping a run
kills the process tree it started *and* any process still carrying that id (a grandchild that
escaped into its own session), so a timeout or an interrupt leaves no orphan behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

import psutil

RUN_ID_ENV = "LABUTILS_RUN_ID"
KERNEL_PID_ENV = "LABUTILS_KERNEL_PID"
POLL_SECONDS = 0.05


class LaunchError(RuntimeError):
    """A distributed run did not finish cleanly."""


class RankFailedError(LaunchError):
    """A rank raised (or crashed); the message carries that rank's traceback or last output."""

    def __init__(self, rank: int | None, details: str, exitcode: int | None = None) -> None:
        self.rank = rank
        self.details = details
        self.exitcode = exitcode
        who = f"rank {rank}" if rank is not None else "a rank"
        code = f" (exit code {exitcode})" if exitcode is not None else ""
        super().__init__(f"{who} failed{code}:\n{details.rstrip()}")


class LaunchTimeoutError(LaunchError, TimeoutError):
    """The run exceeded its timeout; every rank was killed."""


class PrefixedLines:
    """Reassemble lines from chunks of bytes and write each one with a prefix (``[rank 1] ...``)."""

    def __init__(self, prefix: str, sink: Callable[[], TextIO], keep_chars: int = 6000) -> None:
        self.prefix = prefix
        self.sink = sink
        self.partial = b""
        self.keep_chars = keep_chars
        self.tail = ""

    def feed(self, data: bytes) -> None:
        """Write every complete line in ``partial + data``; keep the unfinished rest."""
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            self._write(line.decode(errors="replace"))

    def close(self) -> None:
        """Write what is left of an unterminated last line."""
        if self.partial:
            self._write(self.partial.decode(errors="replace"))
            self.partial = b""

    def _write(self, text: str) -> None:
        stream = self.sink()
        stream.write(f"{self.prefix}{text}\n")
        stream.flush()
        self.tail = (self.tail + text + "\n")[-self.keep_chars :]


class PipeReader:
    """Non-blocking reader of a subprocess pipe, feeding a :class:`PrefixedLines`."""

    def __init__(self, pipe, lines: PrefixedLines) -> None:
        self.fd = pipe.fileno()
        self.pipe = pipe
        os.set_blocking(self.fd, False)
        self.lines = lines
        self.done = False

    def pump(self) -> None:
        """Read whatever the pipe holds now."""
        while not self.done:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            if not data:
                self.done = True
                self.pipe.close()
                self.lines.close()
                return
            self.lines.feed(data)

    def finish(self) -> None:
        """Drain the pipe after the process has exited."""
        self.pump()
        if not self.done:
            self.lines.close()


class FileTail:
    """Follow a log file that another process appends to (it may not exist yet)."""

    def __init__(self, path_of: Callable[[], Path | None], lines: PrefixedLines) -> None:
        self.path_of = path_of
        self.handle: BinaryIO | None = None
        self.lines = lines

    def pump(self) -> None:
        """Read what was appended since the last call."""
        if self.handle is None:
            path = self.path_of()
            if path is None or not path.exists():
                return
            self.handle = open(path, "rb")  # kept open while tailing
        while data := self.handle.read(65536):
            self.lines.feed(data)

    def finish(self) -> None:
        """Read the rest and close."""
        self.pump()
        self.lines.close()
        if self.handle is not None:
            self.handle.close()


def stdout_sink() -> TextIO:
    """The current ``sys.stdout`` (looked up per line: IPython swaps it per cell)."""
    return sys.stdout


def stderr_sink() -> TextIO:
    """The current ``sys.stderr``."""
    return sys.stderr


def supervise(
    procs: Sequence[subprocess.Popen],
    readers: Sequence[PipeReader | FileTail],
    timeout: float,
    fail_fast: bool = True,
) -> str:
    """Pump output until every process exits; return ``"ok"``, ``"failed"`` or ``"timeout"``.

    With ``fail_fast``, the first non-zero exit ends the wait at once (the other ranks would
    otherwise block in a collective until gloo's own 30-minute timeout). KeyboardInterrupt
    propagates: the caller stops the run in a ``finally``.
    """
    deadline = time.monotonic() + timeout
    while True:
        for reader in readers:
            reader.pump()
        codes = [proc.poll() for proc in procs]
        if all(code is not None for code in codes):
            outcome = "ok" if all(code == 0 for code in codes) else "failed"
            break
        if fail_fast and any(code not in (None, 0) for code in codes):
            outcome = "failed"
            break
        if time.monotonic() > deadline:
            outcome = "timeout"
            break
        time.sleep(POLL_SECONDS)
    return outcome


def marked_processes(run_id: str) -> list[psutil.Process]:
    """Live processes whose environment carries ``LABUTILS_RUN_ID=run_id`` (zombies excluded)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and proc.environ().get(RUN_ID_ENV) == run_id:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _tree(pids: Sequence[int]) -> list[psutil.Process]:
    procs: list[psutil.Process] = []
    for pid in pids:
        try:
            root = psutil.Process(pid)
            procs += [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    return procs


def _signal_all(procs: Sequence[psutil.Process], sig: signal.Signals) -> None:
    for proc in procs:
        try:
            proc.send_signal(sig)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue


def proc_shows_this_namespace() -> bool:
    """Whether ``/proc`` numbers processes as this process sees them.

    In a pid namespace whose own ``/proc`` could not be mounted (the grading sandbox under a
    container), ``/proc/<pid>`` is another process than ``<pid>`` here, so psutil must not be trusted.
    """
    try:
        return os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


def _stop_groups(procs: Sequence[subprocess.Popen], grace: float) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds, to each rank's process group (ranks lead their own)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    continue
        deadline = time.monotonic() + grace
        while any(proc.poll() is None for proc in procs) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)


def stop_run(procs: Sequence[subprocess.Popen], run_id: str, grace: float = 3.0) -> None:
    """Stop everything a run started: SIGTERM to the whole tree, SIGKILL after ``grace`` seconds.

    Then a sweep by ``LABUTILS_RUN_ID`` kills anything that escaped the tree, and the direct
    children are reaped so no zombie is left either. Where ``/proc`` belongs to another pid
    namespace, only the ranks' process groups are signalled (the sandbox's end kills the rest).
    """
    if not proc_shows_this_namespace():
        _stop_groups(procs, grace)
        return
    alive = [proc for proc in _tree([p.pid for p in procs if p.poll() is None])]
    alive += [proc for proc in marked_processes(run_id) if proc not in alive]
    if alive:
        _signal_all(alive, signal.SIGTERM)
        _, alive = psutil.wait_procs(alive, timeout=grace)
        _signal_all(alive, signal.SIGKILL)
        psutil.wait_procs(alive, timeout=grace)
    for _ in range(3):
        leftovers = marked_processes(run_id)
        if not leftovers:
            break
        _signal_all(leftovers, signal.SIGKILL)
        psutil.wait_procs(leftovers, timeout=grace)
    for proc in procs:
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def first_rank_error(error_dir: Path) -> dict | None:
    """The earliest failure report a rank wrote (``rank``, ``time``, ``traceback``), if any."""
    reports = []
    for path in sorted(error_dir.glob("rank*.json")):
        try:
            reports.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return min(reports, key=lambda report: report["time"]) if reports else None
