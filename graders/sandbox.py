"""Sandboxed workers, seen from the trusted grader: one bubblewrap sandbox per worker holding a warm
zygote (:mod:`graders.zygote`), which forks a jailed process per job (:mod:`graders.jail`).

The sandbox sees the Python installation, the venv and the ``labutils`` and ``graders`` packages,
read-only, and nothing else of the machine's files: no course sources, no gradebook, no other
submission. Results come back as bytes and are read with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from graders.compare import check_plain
from graders.jail import Limits
from graders.job import Job
from graders.zygote import read_frame, write_frame

FIRST_UID = 64000
SYSTEM_BINDS = ("/usr", "/etc")
SYSTEM_LINKS = {"/lib": "usr/lib", "/lib64": "usr/lib64", "/bin": "usr/bin", "/sbin": "usr/sbin"}


@dataclass
class JobOutcome:
    """What came back from one job: its status, costs, isolation notes and (plain) result."""

    status: str
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    max_rss_mb: int = 0
    output_tail: str = ""
    isolation: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None


def readable_binds() -> list[str]:
    """Folders the sandbox needs, read-only: Python, the venv, and the two course packages."""
    packages = [Path(importlib.util.find_spec(name).origin).parent for name in ("graders", "labutils")]
    folders = {sys.base_prefix, sys.prefix, *map(str, packages)}
    return sorted(f for f in folders if not any(f.startswith(s + "/") for s in SYSTEM_BINDS))


def bwrap_command(privileged: bool) -> list[str]:
    """The bubblewrap command line that starts a worker's zygote."""
    cmd = ["bwrap", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net",
           "--unshare-uts", "--unshare-cgroup-try"]
    cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if privileged else ["--unshare-user"]
    for folder in SYSTEM_BINDS:
        cmd += ["--ro-bind", folder, folder]
    for link, target in SYSTEM_LINKS.items():
        if os.path.islink(link):
            cmd += ["--symlink", target, link]
        elif os.path.isdir(link):
            cmd += ["--ro-bind", link, link]
    cmd += ["--ro-bind-try", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    made: set[str] = set()
    for folder in readable_binds():
        for parent in reversed(Path(folder).parents[:-1]):
            if str(parent) not in made:
                cmd += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        cmd += ["--ro-bind", folder, folder]
    return cmd + ["--clearenv", "--setenv", "PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin",
                  "--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8", "--setenv", "MPLBACKEND", "Agg",
                  "--setenv", "MPLCONFIGDIR", "/tmp/zygote/mpl", "--setenv", "XDG_CACHE_HOME", "/tmp/zygote/cache",
                  "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--chdir", "/tmp"]


def job_env(threads: int) -> dict[str, str]:
    """The whole environment a job sees: nothing of the grader's."""
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": "/tmp/home", "TMPDIR": "/tmp",
            "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/cache/mpl", "PYTHONDONTWRITEBYTECODE": "1",
            "TORCHINDUCTOR_CACHE_DIR": "/tmp/cache/inductor", "OMP_NUM_THREADS": str(threads),
            "IPYTHONDIR": "/tmp/home/.ipython", "XDG_CACHE_HOME": "/tmp/cache",
            "GLOO_SOCKET_IFNAME": "lo"}  # the job's network namespace has only loopback


def isolation_warning(use_bwrap: bool) -> str | None:
    """A line saying what is missing from the sandbox, or None when all layers are available."""
    if use_bwrap and shutil.which("bwrap"):
        return None
    return ("WARNING: bubblewrap (bwrap) is not in use: jobs still get their own uid, namespaces and limits where "
            "the kernel allows, but can read every file the grader's uid can read (course sources, gradebook). "
            "Install it: apt-get install bubblewrap")


def base_processes() -> int:
    """Tasks (processes and threads) this non-root uid already runs: they count against RLIMIT_NPROC."""
    if os.getuid() == 0:
        return 0
    import psutil

    me = os.getuid()
    return sum(p.info["num_threads"] or 1 for p in psutil.process_iter(["uids", "num_threads"])
               if p.info["uids"] and p.info["uids"].real == me)


class Worker:
    """One sandbox with a warm zygote; runs jobs one at a time."""

    def __init__(self, slot: int, limits: Limits, threads: int, use_bwrap: bool = True, log: Path | None = None,
                 warm: tuple[str, ...] = ()) -> None:
        self.slot, self.limits, self.threads, self.warm = slot, limits, threads, warm
        self.use_bwrap = use_bwrap and shutil.which("bwrap") is not None
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the sandbox and wait until its zygote has imported torch."""
        self.spawn()
        self.wait_ready()

    def spawn(self) -> None:
        """Start the sandbox. bwrap dies with the *thread* that started it: call from a long-lived one."""
        zygote = [sys.executable, "-m", "graders.zygote", *self.warm]
        cmd = bwrap_command(os.getuid() == 0) + zygote if self.use_bwrap else zygote
        stderr = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115 - lives with the worker
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                     env=None if self.use_bwrap else job_env(self.threads),
                                     cwd="/tmp" if not self.use_bwrap else None)

    def wait_ready(self) -> None:
        """Block until the zygote reports it has imported what jobs need."""
        ready = read_frame(self.proc.stdout)
        if ready is None:
            raise RuntimeError(f"sandbox worker {self.slot} did not start (see {self.log or 'its stderr'})")

    def run(self, job: Job) -> JobOutcome:
        """Run ``job`` in a fresh jailed process; restarts the sandbox if it died."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        spec = {"job": {**job.to_plain(), "probes_source": ""}, "limits": asdict(self.limits),
                "uid": FIRST_UID + self.slot, "env": {**job_env(self.threads), **job.env},
                "base_processes": base_processes(),
                "keep": [f for f in readable_binds() if f == "/tmp" or f.startswith("/tmp/")]}
        probes = {"source": job.probes_source, "file": job.probes_file, "salt": job.salt}
        try:
            write_frame(self.proc.stdin, json.dumps(spec).encode())
            write_frame(self.proc.stdin, json.dumps(probes).encode())
            header, result = read_frame(self.proc.stdout), read_frame(self.proc.stdout)
        except (OSError, ValueError, MemoryError):
            header = result = None
        if header is None or result is None:
            self.close()
            return JobOutcome("worker died")
        meta = json.loads(header)
        outcome = JobOutcome(meta["status"], meta["seconds"], meta["cpu_seconds"], meta["max_rss_mb"],
                             meta["output_tail"], meta["isolation"])
        if outcome.status == "ok":
            outcome.result = parse_result(result)
            if outcome.result is None:
                outcome.status = "bad result"
        return outcome

    def close(self) -> None:
        """Stop the sandbox (its jobs die with it)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def parse_result(data: bytes) -> dict[str, Any] | None:
    """The job's result, if it is the plain structure a job returns; None for anything else."""
    try:
        result = torch.load(io.BytesIO(data), weights_only=True)
    except Exception:  # noqa: BLE001 - whatever the submission wrote, it is not a result
        return None
    if not (isinstance(result, dict) and check_plain(result) and isinstance(result.get("cells"), dict)
            and isinstance(result.get("probes"), dict)):
        return None
    cells_ok = all(isinstance(c, dict) and type(c.get("ok")) is bool and isinstance(c.get("error"), str)
                   for c in result["cells"].values())
    probes_ok = all(isinstance(p, dict) and ("value" in p or isinstance(p.get("error"), str))
                    for p in result["probes"].values())
    return result if cells_ok and probes_ok else None
