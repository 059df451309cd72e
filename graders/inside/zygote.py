"""The warm process inside a worker's sandbox: imports torch once, then forks one jailed process
per grading job, so a submission costs a fork, not an interpreter start and ``import torch``.

The zygote never touches job data: it forks a supervisor *first*, and the supervisor reads its own
job from stdin and answers on stdout; when it exits, the zygote forks the next one. So nothing of an
earlier job (spec, probes, salt, result) ever exists in the memory a job is forked from.

Protocol on stdin/stdout (frames: 8-byte little-endian length, then the bytes; every message is a
type of :mod:`graders.boundary.protocol`):
  grader -> supervisor: JobSpec (cells, limits, environment; no probes, no salt)
  supervisor -> grader: ASK_PROBES once the notebook has run; grader -> supervisor: ProbeRequest
  supervisor -> grader: DoneHeader (status, times, isolation, cells), then the result (:mod:`graders.boundary.wire`)

Process tree per job: zygote -> supervisor (own uid and namespaces) -> job process (pid 1 of its pid
namespace: when it ends, everything the submission started ends with it).
"""

from __future__ import annotations

import ctypes
import json
import os
import selectors
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from graders.boundary.protocol import ASK_PROBES, DoneHeader, JobSpec, Limits, ProbeRequest, Ready, Status
from graders.inside import jail
from zygote.child import close_all_but, reseed
from zygote.frames import frame, read_frame, write_all, write_frame
from zygote.server import fork_checked, preload

WARM_MODULES = (
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.utils.data",
    "numpy",
    "IPython.core.interactiveshell",
    "graders.inside.job",
    "graders.inside.probing",
    "labutils",
    "matplotlib.pyplot",
)
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40
TAIL_BYTES = 4096
CONTROL_BYTES = 1 << 20
EXIT_POLL_SECONDS = 0.05  # how often the job's exit is polled where pidfd_open is missing (Linux < 5.3)
EXIT_NO_MORE_JOBS = 3


# Imports that leave a native thread running (onnxruntime's thread pool): a process that forks must not
# make them, so jobs import these themselves.
STARTS_THREADS = ("onnxruntime",)


def warm_up(extra: list[str]) -> list[str]:
    """Import what every job needs, and ``extra`` (what the labs import); return what failed."""
    wanted = [m for m in [*WARM_MODULES, *extra] if m.split(".")[0] not in STARTS_THREADS]
    failed = preload(wanted, required=False)
    if "labutils.launch" in sys.modules:  # the labs launch ranks: what their zygote, forked per job, imports
        from labutils.launch.zygote import PRELOAD as RANK_MODULES

        failed += preload(RANK_MODULES, required=False)
    for module, first_call in FIRST_CALLS.items():
        if module in extra:
            first_call()
    if "graders.inside.rules" in sys.modules:
        _warm_rules()
    return failed


def _warm_rules() -> None:
    """A rule recorder's first use imports ~800 modules (4 s): pay it here, once, not in every job."""
    import torch

    from graders.inside.rules import forbidden

    with forbidden(aten=["aten.transpose"], calls=[torch.broadcast_shapes]):
        torch.ones(2, 2).as_strided((2, 2), (1, 2)).sum()


def _warm_assert_close() -> None:
    """torch.testing.assert_close's first call imports sympy (1.5 s)."""
    import torch

    torch.testing.assert_close(torch.zeros(2), torch.zeros(2))


def _warm_onnx_export() -> None:
    """torch.onnx.export's first call builds its operator registry (3-4 s of every job that exports). tqdm's
    monitor thread, which the export would start, stays off: a zygote forks single-threaded."""
    import torch
    from tqdm import tqdm

    from labutils.deploy import quiet_onnx_export

    tqdm.monitor_interval = 0
    with quiet_onnx_export():
        torch.onnx.export(torch.nn.Linear(2, 1).eval(), (torch.ones(1, 2),), dynamo=True, verbose=False)


def _warm_draws() -> None:
    """A probe's first structured draw builds Hypothesis's engine (0.3 s of every job whose probes draw). The
    strategy and seed here are fixed and no lab's: nothing of a probe or a salt reaches the zygote."""
    from hypothesis import strategies as st

    from graders.inside.draws import examples
    from graders.inside.probing import Draw

    kinds = st.one_of(
        st.tuples(st.just("a"), st.integers(0, 3)), st.tuples(st.just("b"), st.permutations(range(3)))
    )
    examples(
        Draw(0, "zygote warm-up"),
        st.tuples(st.lists(st.integers(1, 5), max_size=3), st.lists(kinds, max_size=3)),
        count=5,
    )


# First calls that cost seconds, paid once in the zygote when the labs ask for the module (graders.grader.grading.warm_modules).
FIRST_CALLS = {
    "torch.testing": _warm_assert_close,
    "torch.onnx": _warm_onnx_export,
    "graders.inside.draws": _warm_draws,
}


def loopback_up() -> str:
    """Bring ``lo`` up in the job's fresh network namespace (distributed labs talk over it)."""
    import fcntl
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING, b"")
        fcntl.ioctl(sock, SIOCSIFFLAGS, request)
    return "loopback only (no network)"


def _step(notes: list[str], what: str, action: Callable[[], str]) -> None:
    try:
        notes.append(action())
    except Exception as err:  # noqa: BLE001 - a missing layer is reported, never hidden
        notes.append(f"NOT ACTIVE: {what} ({err})")


def _job_process(spec: JobSpec, pipes: dict[str, int], notes: list[str]) -> None:
    """Pid 1 of the job's namespaces: finish the jail, run the cells, then (only then) the probes."""
    import torch

    from graders.boundary import wire
    from graders.inside.job import execute_cells, run_probes

    limits = spec.limits
    _step(notes, "private /tmp", lambda: jail.fresh_tmp(limits.tmp_bytes, spec.keep))
    _step(notes, "loopback", loopback_up)
    os.environ.clear()
    os.environ.update(spec.env)
    _step(notes, "resource limits", lambda: jail.set_limits(limits, spec.base_processes))
    _step(notes, "capabilities", jail.drop_capabilities)
    os.write(pipes["control"], (json.dumps(notes) + "\n").encode())
    if not spec.uid_optional and any(n.startswith("NOT ACTIVE: separate uid") for n in notes):
        os._exit(71)  # untrusted code never runs as the grader's uid: the job ends as crashed, nothing ran
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(pipes["output"], 1)
    os.dup2(pipes["output"], 2)
    reseed()  # a job's random state is its own, not the zygote's
    torch.set_num_threads(int(spec.env.get("OMP_NUM_THREADS", "1")))
    if "labutils.launch" in sys.modules:  # the lab launches ranks: fork their zygote while nothing else ran
        from labutils.launch.launcher import base_env
        from labutils.launch.zygote import fork_zygote_here

        fork_zygote_here(base_env())
    cells, ns = execute_cells(spec.cells)
    os.write(pipes["control"], ("cells " + json.dumps(cells) + "\n").encode())
    os.close(pipes["control"])
    probes = ProbeRequest.from_frame(read_frame(pipes["probes"]) or b"")
    observations = run_probes(probes.source, probes.file, ns, probes.salt, probes.traceback, probes.only)
    sys.stdout.flush()
    sys.stderr.flush()
    data = wire.encode({"probes": observations})
    write_all(pipes["result"], data)
    os._exit(0)


def _serve(out: int) -> None:
    """The zygote's child: read one job, jail itself, run the job in a grandchild, answer the grader."""
    try:
        frame = read_frame(0)
        if frame is None:
            os._exit(EXIT_NO_MORE_JOBS)
        spec = JobSpec.from_frame(frame)
        pairs = {name: os.pipe() for name in ("output", "control", "result", "probes")}
        close_all_but({0, out, 2, *(fd for pair in pairs.values() for fd in pair)})
        os.setsid()
        notes: list[str] = []
        _step(notes, "separate uid", lambda: jail.drop_to_uid(spec.uid))
        _step(notes, "namespaces", lambda: jail.private_namespaces(network=True))
        started = time.monotonic()
        pid = fork_checked()
        if pid == 0:
            close_all_but(
                {2, pairs["output"][1], pairs["control"][1], pairs["result"][1], pairs["probes"][0]}
            )
            _job_process(
                spec,
                {
                    "output": pairs["output"][1],
                    "control": pairs["control"][1],
                    "result": pairs["result"][1],
                    "probes": pairs["probes"][0],
                },
                notes,
            )
        for name in ("output", "control", "result"):
            os.close(pairs[name][1])
        os.close(pairs["probes"][0])
        watch = _Watch(
            pid,
            spec.limits,
            {n: pairs[n][0] for n in ("output", "control", "result")},
            pairs["probes"][1],
            lambda: _ask_for_probes(out),
        )
        header, result = _finish(pid, watch, started)
        write_frame(out, header.to_frame())
        write_frame(out, result)
        os._exit(0)
    except BaseException as err:  # noqa: BLE001 - the supervisor must never return into the zygote's loop
        os.write(2, f"sandbox supervisor failed: {type(err).__name__}: {err}\n".encode())
        os._exit(70)


def _ask_for_probes(out: int) -> bytes:
    """The notebook has run: ask the grader for the probes (a frame for the job's probes pipe)."""
    write_frame(out, ASK_PROBES)
    return frame(read_frame(0) or b"{}")


class _Watch:
    """Reads a job's output, control and result pipes until the job has exited and they are closed, a cap
    or the deadline. The job's exit is watched on its own (a pidfd, else polled): a job that closes its
    pipes and sleeps still meets the deadline.

    The control pipe carries the job's isolation notes, then one ``cells`` line when the notebook
    has run: that line is taken once, and only then are the probes (from ``fetch_probes``) written
    to the job's ``probes_fd``, without blocking (no threads here: a process that unshared its pid
    namespace cannot start one).
    """

    def __init__(
        self,
        pid: int,
        limits: Limits,
        reads: dict[str, int],
        probes_fd: int,
        fetch_probes: Callable[[], bytes],
    ) -> None:
        self.pid, self.limits, self.selector, self.fetch_probes = (
            pid,
            limits,
            selectors.DefaultSelector(),
            fetch_probes,
        )
        self.probes_fd, self.pending = probes_fd, memoryview(b"")
        self.data = {name: bytearray() for name in reads}
        self.output_bytes = 0
        self.verdict: Status | None = None
        self.notes: list[str] = []
        self.cells: dict[str, Any] | None = None
        self.ended: tuple[int, Any] | None = None  # the job's wait status and resource usage, once reaped
        for name, fd in reads.items():
            os.set_blocking(fd, False)
            self.selector.register(fd, selectors.EVENT_READ, name)
        self.exit_fd = _pidfd(pid)
        if self.exit_fd is not None:
            self.selector.register(self.exit_fd, selectors.EVENT_READ, "exit")

    def run(self, deadline: float) -> None:
        """Watch until the job has ended and its pipes are drained, or a verdict (a cap, the deadline)."""
        while not self.verdict and (self.ended is None or self.selector.get_map()):
            left = deadline - time.monotonic()
            if left <= 0:
                self.verdict = Status.TIMEOUT
                break
            wait = min(left, 1.0 if self.exit_fd is not None else EXIT_POLL_SECONDS)
            for key, _ in self.selector.select(timeout=wait):
                if key.data == "probes":
                    self._write_probes()
                elif key.data == "exit":
                    self._reap()
                else:
                    self._read(key)
            if self.exit_fd is None and self.ended is None:
                self._reap()

    def _reap(self) -> None:
        """Collect the job's exit status if it has ended (never blocks)."""
        pid, status, usage = os.wait4(self.pid, os.WNOHANG)
        if not pid:
            return
        self.ended = (status, usage)
        if self.exit_fd is not None:
            self.selector.unregister(self.exit_fd)
            os.close(self.exit_fd)
            self.exit_fd = None

    def _write_probes(self) -> None:
        try:
            self.pending = self.pending[os.write(self.probes_fd, self.pending[: 1 << 16]) :]
        except OSError:
            self.pending = memoryview(b"")  # the job is gone
        if not self.pending:
            self.selector.unregister(self.probes_fd)
            os.close(self.probes_fd)
            self.probes_fd = -1

    def _read(self, key: selectors.SelectorKey) -> None:
        chunk = os.read(key.fd, 1 << 16)
        if not chunk:
            self.selector.unregister(key.fd)
            os.close(key.fd)
            return
        if key.data == "output":
            self.output_bytes += len(chunk)
            self.data["output"] = (self.data["output"] + chunk)[-TAIL_BYTES:]
            if self.output_bytes > self.limits.output_bytes:
                self.verdict = Status.OUTPUT_LIMIT
        elif key.data == "control":
            self._control(chunk)
        else:
            self.data["result"] += chunk
            if len(self.data["result"]) > self.limits.result_bytes:
                self.verdict = Status.RESULT_TOO_LARGE

    def _control(self, chunk: bytes) -> None:
        if self.cells is not None:
            return  # after the cells line, nothing the job says on this pipe counts
        self.data["control"] += chunk
        if len(self.data["control"]) > CONTROL_BYTES:
            self.verdict = Status.BAD_RESULT
            return
        *lines, rest = self.data["control"].split(b"\n")
        self.data["control"] = bytearray(rest)
        for line in lines:
            if line.startswith(b"cells "):
                self.cells = _json_or_none(line[6:])
                if not isinstance(self.cells, dict):
                    self.verdict = Status.BAD_RESULT
                    return
                self.pending = memoryview(self.fetch_probes())
                os.set_blocking(self.probes_fd, False)
                self.selector.register(self.probes_fd, selectors.EVENT_WRITE, "probes")
                return
            if not self.notes:
                notes = _json_or_none(line)
                self.notes = [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []

    def close(self) -> None:
        for key in list(self.selector.get_map().values()):
            self.selector.unregister(key.fd)
            os.close(key.fd)
        if self.probes_fd >= 0 and not self.pending:
            os.close(self.probes_fd)


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits, or None where the kernel has no pidfd."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _json_or_none(data: bytes | bytearray) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _finish(pid: int, watch: _Watch, started: float) -> tuple[DoneHeader, bytes]:
    """Watch the job to its end (or kill it at a limit); the header and result bytes."""
    watch.run(started + watch.limits.wall_seconds)
    if watch.verdict and watch.ended is None:  # once reaped, the pid may be another process's
        os.kill(pid, signal.SIGKILL)  # pid 1 of its namespace: everything it started dies with it
    watch.close()
    status, usage = watch.ended or os.wait4(pid, 0)[1:]
    exited = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finished = exited and bool(watch.data["result"]) and watch.cells is not None
    forged = (
        exited and bool(watch.data["result"]) and watch.cells is None
    )  # a result before the notebook ended
    header = DoneHeader(
        watch.verdict or (Status.OK if finished else Status.BAD_RESULT if forged else Status.CRASHED),
        seconds=round(time.monotonic() - started, 3),
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 3),
        max_rss_mb=usage.ru_maxrss // 1024,
        output_tail=watch.data["output"].decode(errors="replace"),
        isolation=watch.notes,
        cells=watch.cells or {},
        exit_code=os.waitstatus_to_exitcode(status),
        output_bytes=watch.output_bytes,
    )
    return header, bytes(watch.data["result"]) if header.status == Status.OK else b""


def main() -> None:
    """Fork a supervisor per job until the grader closes stdin; never read a job here."""
    out = os.dup(1)
    os.dup2(2, 1)  # stray prints (of the warm-up, of a job) must not corrupt the protocol
    failed = warm_up(sys.argv[1:])
    ctypes.CDLL(None).prctl(jail.PR_SET_DUMPABLE, 0, 0, 0, 0)  # jobs may not ptrace or read this process
    write_frame(out, Ready(failed, threading.active_count()).to_frame())
    while True:
        pid = fork_checked()
        if pid == 0:
            _serve(out)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EXIT_NO_MORE_JOBS:
            break


if __name__ == "__main__":
    main()
