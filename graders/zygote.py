"""The warm process inside a worker's sandbox: imports torch once, then forks one jailed process
per grading job, so a submission costs a fork, not an interpreter start and ``import torch``.

Protocol on stdin/stdout (frames: 8-byte little-endian length, then the bytes):
  grader -> zygote: job spec (JSON), then probes (JSON: sent on only after the notebook ran)
  zygote -> grader: header (JSON: status, times, isolation notes, output tail), then result bytes

Process tree per job: zygote -> supervisor child (own uid and namespaces) -> job process (pid 1
of its pid namespace: when it ends, everything the submission started ends with it).
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
from typing import Any, BinaryIO

from graders import jail

WARM_MODULES = ("torch", "torch.nn", "torch.nn.functional", "torch.utils.data", "numpy",
                "IPython.core.interactiveshell", "graders.job", "graders.probing", "labutils", "matplotlib.pyplot")
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40
TAIL_BYTES = 4096
MAX_FRAME = 256 << 20


def read_frame(stream: BinaryIO) -> bytes | None:
    """One frame, or None at end of stream."""
    head = stream.read(8)
    if len(head) < 8:
        return None
    size = struct.unpack("<Q", head)[0]
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes: the stream is corrupt")
    return stream.read(size)


def write_frame(stream: BinaryIO, data: bytes) -> None:
    """One frame, flushed."""
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def warm_up(extra: list[str]) -> list[str]:
    """Import what every job needs, and ``extra`` (what the labs import); return what failed."""
    import importlib

    failed = []
    for name in [*WARM_MODULES, *extra]:
        before = set(sys.modules)
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a missing optional module only costs time later
            failed.append(name)
            for partial in set(sys.modules) - before:  # a half-imported module would break every job
                del sys.modules[partial]
    if "torch.testing" in extra:
        import torch

        torch.testing.assert_close(torch.zeros(2), torch.zeros(2))  # its first call imports sympy: 1.5 s
    return failed


def loopback_up() -> str:
    """Bring ``lo`` up in the job's fresh network namespace (distributed labs talk over it)."""
    import fcntl
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING, b"")
        fcntl.ioctl(sock, SIOCSIFFLAGS, request)
    return "loopback only (no network)"


def _step(notes: list[str], what: str, action: Any) -> None:
    try:
        notes.append(action())
    except Exception as err:  # noqa: BLE001 - a missing layer is reported, never hidden
        notes.append(f"NOT ACTIVE: {what} ({err})")


def _job_process(spec: dict, pipes: dict[str, int], notes: list[str]) -> None:
    """Pid 1 of the job's namespaces: finish the jail, run the cells, then the probes."""
    import io

    import torch

    from graders.job import Job, execute_cells

    limits = jail.Limits(**spec["limits"])
    _step(notes, "private /tmp", lambda: jail.fresh_tmp(limits.tmp_bytes, spec.get("keep", [])))
    _step(notes, "loopback", loopback_up)
    os.environ.clear()
    os.environ.update(spec["env"])
    _step(notes, "resource limits", lambda: jail.set_limits(limits, spec.get("base_processes", 0)))
    _step(notes, "capabilities", jail.drop_capabilities)
    os.write(pipes["control"], (json.dumps(notes) + "\n").encode())
    os.close(pipes["control"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(pipes["output"], 1)
    os.dup2(pipes["output"], 2)
    torch.set_num_threads(int(spec["env"].get("OMP_NUM_THREADS", "1")))
    job = Job.from_plain({**spec["job"], "probes_source": "", "salt": 0})
    cells, ns = execute_cells(job.cells)
    with os.fdopen(pipes["probes"], "rb") as stream:
        probes = json.loads(read_frame(stream) or b"{}")
    from graders.probing import load_probes, run_probe

    observations = {g: run_probe(p, ns, int(probes["salt"])) for g, p in
                    load_probes(probes["source"], probes["file"]).items()} if probes.get("source") else {}
    sys.stdout.flush()
    sys.stderr.flush()
    buffer = io.BytesIO()
    torch.save({"cells": cells, "probes": observations}, buffer)
    with os.fdopen(pipes["result"], "wb") as out:
        out.write(buffer.getvalue())
    os._exit(0)


def _supervisor(spec: dict, pipes: dict[str, int]) -> None:
    """The forked child: own uid and namespaces, then fork the job process and wait for it."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)  # the zygote's job stream: other students' notebooks
        keep = sorted({*pipes.values(), 1, 2})
        for low, high in zip([3, *[k + 1 for k in keep if k >= 3]], [*[k for k in keep if k >= 3], 65536], strict=True):
            os.closerange(low, high)  # the zygote's result stream, and anything else inherited
        os.setsid()
        notes: list[str] = []
        _step(notes, "separate uid", lambda: jail.drop_to_uid(spec["uid"]))
        _step(notes, "namespaces", lambda: jail.private_namespaces(network=True))
        pid = os.fork()
        if pid == 0:
            _job_process(spec, pipes, notes)
        os.write(pipes["control"], f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
    except BaseException as err:  # noqa: BLE001 - the supervisor must never return into the zygote's loop
        os.write(2, f"sandbox supervisor failed: {err}\n".encode())
        os._exit(70)


def _send_probes(fd: int, probes: bytes) -> None:
    try:
        with os.fdopen(fd, "wb") as stream:
            write_frame(stream, probes)
    except OSError:
        pass  # the job ended before it asked for its probes


class _Watch:
    """Reads a job's output, control and result pipes until they close, a cap or the deadline."""

    def __init__(self, limits: jail.Limits, reads: dict[str, int]) -> None:
        self.limits, self.selector = limits, selectors.DefaultSelector()
        self.data = {name: bytearray() for name in reads}
        self.output_bytes, self.verdict = 0, ""
        for name, fd in reads.items():
            os.set_blocking(fd, False)
            self.selector.register(fd, selectors.EVENT_READ, name)

    def run(self, deadline: float) -> None:
        while self.selector.get_map() and not self.verdict:
            left = deadline - time.monotonic()
            if left <= 0:
                self.verdict = "timeout"
                break
            for key, _ in self.selector.select(timeout=min(left, 1.0)):
                self._read(key)

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
                self.verdict = "output limit"
        else:
            self.data[key.data] += chunk
            if key.data == "result" and len(self.data["result"]) > self.limits.result_bytes:
                self.verdict = "result too large"

    def close(self) -> None:
        for key in list(self.selector.get_map().values()):
            self.selector.unregister(key.fd)
            os.close(key.fd)


def supervise(spec: dict, probes: bytes) -> tuple[dict, bytes]:
    """Run one job in a jailed child; return the header and the result bytes."""
    limits = jail.Limits(**spec["limits"])
    pairs = {name: os.pipe() for name in ("output", "control", "result", "probes")}
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _supervisor(spec, {"output": pairs["output"][1], "control": pairs["control"][1],
                           "result": pairs["result"][1], "probes": pairs["probes"][0]})
    for name in ("output", "control", "result"):
        os.close(pairs[name][1])
    os.close(pairs["probes"][0])
    threading.Thread(target=_send_probes, args=(pairs["probes"][1], probes), daemon=True).start()
    watch = _Watch(limits, {name: pairs[name][0] for name in ("output", "control", "result")})
    watch.run(started + limits.wall_seconds)
    control = watch.data["control"].decode(errors="replace").splitlines()
    job_pid = int(control[0]) if control and control[0].isdigit() else None
    if watch.verdict or job_pid is None:
        for victim in filter(None, (job_pid, pid)):
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                pass
    watch.close()
    _, status, usage = os.wait4(pid, 0)
    finished = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and bool(watch.data["result"])
    header = {"status": watch.verdict or ("ok" if finished else "crashed"),
              "exit_code": os.waitstatus_to_exitcode(status), "seconds": round(time.monotonic() - started, 3),
              "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3), "max_rss_mb": usage.ru_maxrss // 1024,
              "output_bytes": watch.output_bytes, "output_tail": watch.data["output"].decode(errors="replace"),
              "isolation": json.loads(control[1]) if len(control) > 1 else []}
    return header, bytes(watch.data["result"]) if header["status"] == "ok" else b""


def main() -> None:
    """Serve jobs from stdin until it closes."""
    failed = warm_up(sys.argv[1:])
    ctypes.CDLL(None).prctl(jail.PR_SET_DUMPABLE, 0, 0, 0, 0)  # jobs may not ptrace or read this process
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints must not corrupt the protocol
    write_frame(out, json.dumps({"ready": True, "warm_failed": failed, "threads": threading.active_count()}).encode())
    stdin = sys.stdin.buffer
    while (frame := read_frame(stdin)) is not None:
        probes = read_frame(stdin) or b"{}"
        header, result = supervise(json.loads(frame), probes)
        write_frame(out, json.dumps(header).encode())
        write_frame(out, result)


if __name__ == "__main__":
    main()
