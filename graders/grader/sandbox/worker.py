"""Sandboxed workers, seen from the trusted grader: one bubblewrap sandbox per worker holding a warm
zygote (:mod:`graders.inside.zygote`), which forks a jailed process per job (:mod:`graders.inside.jail`).

The sandbox sees the Python installation, the venv and the ``labutils``, ``graders`` and ``zygote`` packages,
read-only, and nothing else of the machine's files: no course sources, no gradebook, no other
submission. Of ``/etc`` it sees a few files written for it (accounts, name lookup) and the few the
libraries read (:data:`HOST_FILES`); of ``/sys`` only the CPU list torch reads, so no cgroup counters. Results come back on :mod:`graders.boundary.wire`, read by :mod:`graders.boundary.job_result` under a
budget before anything reads them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil

from graders.boundary.job_result import HEADER_BYTES, Done, JobOutcome, completed, supervisor_said
from graders.boundary.protocol import Job, JobSpec, Limits, ProbeRequest, Status
from graders.grader.sandbox import cgroups, watchdog
from zygote.frames import read_frame, write_frame

FIRST_UID = 64000
SYSTEM_BINDS = ("/usr",)
# Of the host's /etc and /sys, what the libraries read: the dynamic linker's cache, the time zone,
# fontconfig's configuration (matplotlib runs fc-list), the CPUs torch and OpenMP count.
HOST_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/fonts", "/sys/devices/system/cpu")
HOSTNAME = "sandbox"
SYSTEM_LINKS = {"/lib": "usr/lib", "/lib64": "usr/lib64", "/bin": "usr/bin", "/sbin": "usr/sbin"}


# What runs inside the sandbox imports these, and nothing else of the project (never the labs tool); of graders/
# only the sandbox's side and the boundary are bound: the grader, its adapters and checks are not there to import
# (tests/test_imports.py: whatever inside/ imports is among them).
PROJECT_PACKAGES = ("graders", "labutils", "zygote")
SANDBOX_GRADERS = ("__init__.py", "inside", "boundary")


def package_folders() -> list[Path]:
    """Where the project's packages are, as this process imports them."""
    folders = []
    for name in PROJECT_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        folders.append(Path(spec.origin).parent)
    return folders


def package_path() -> str:
    """PYTHONPATH inside the sandbox: the folders holding the bound packages, so that what is imported
    there is what is bound, however this process found the packages (installed, editable, PYTHONPATH)."""
    return os.pathsep.join(sorted({str(folder.parent) for folder in package_folders()}))


def readable_binds() -> list[str]:
    """Folders (and files) the sandbox needs, read-only: Python, the venv, and the project's packages, of graders
    only :data:`SANDBOX_GRADERS`."""
    packages = package_folders()
    graders = [
        str(folder / part) for folder in packages if folder.name == "graders" for part in SANDBOX_GRADERS
    ]
    folders = {sys.base_prefix, sys.prefix, *graders, *(str(f) for f in packages if f.name != "graders")}
    return sorted(f for f in folders if not any(f.startswith(s + "/") for s in SYSTEM_BINDS))


def etc_files(job_uid: int) -> dict[str, str]:
    """The sandbox's own /etc files: accounts for root and the job's uid, names looked up in files only."""
    return {
        "passwd": f"root:x:0:0:root:/tmp:/usr/sbin/nologin\njob:x:{job_uid}:{job_uid}:job:/tmp/home:/usr/sbin/nologin\n",
        "group": f"root:x:0:\njob:x:{job_uid}:\n",
        "hostname": f"{HOSTNAME}\n",
        "hosts": f"127.0.0.1 localhost {HOSTNAME}\n::1 localhost\n",
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
    }


def data_fds(files: dict[str, str]) -> dict[str, int]:
    """Each file's text in an anonymous in-memory file, read from its start (for ``bwrap --ro-bind-data``)."""
    fds = {}
    for name, text in files.items():
        fds[name] = os.memfd_create(name)
        os.write(fds[name], text.encode())
        os.lseek(fds[name], 0, os.SEEK_SET)
    return fds


def bwrap_command(privileged: bool, etc: dict[str, int]) -> list[str]:
    """The bubblewrap command line that starts a worker's zygote; ``etc``: its /etc files (name -> fd)."""
    cmd = [
        "bwrap",
        "--die-with-parent",
        "--new-session",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--hostname",
        HOSTNAME,
        "--unshare-cgroup-try",
    ]
    cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if privileged else ["--unshare-user"]
    for folder in SYSTEM_BINDS:
        cmd += ["--ro-bind", folder, folder]
    for link, target in SYSTEM_LINKS.items():
        if os.path.islink(link):
            cmd += ["--symlink", target, link]
        elif os.path.isdir(link):
            cmd += ["--ro-bind", link, link]
    made: set[str] = set()
    for path in HOST_FILES:
        cmd += _parents(path, made) + ["--ro-bind-try", path, path]
    for name, fd in etc.items():
        cmd += _parents(f"/etc/{name}", made) + ["--perms", "0644", "--ro-bind-data", str(fd), f"/etc/{name}"]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for folder in readable_binds():
        cmd += _parents(folder, made) + ["--ro-bind", folder, folder]
    return cmd + [
        "--clearenv",
        "--setenv",
        "PATH",
        f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "MPLBACKEND",
        "Agg",
        "--setenv",
        "MPLCONFIGDIR",
        "/tmp/zygote/mpl",
        "--setenv",
        "XDG_CACHE_HOME",
        "/tmp/zygote/cache",
        "--setenv",
        "PYTHONDONTWRITEBYTECODE",
        "1",
        "--setenv",
        "PYTHONPATH",
        package_path(),
        "--chdir",
        "/tmp",
    ]


def _parents(path: str, made: set[str]) -> list[str]:
    """bwrap arguments that make ``path``'s missing parent folders, readable by any uid (once each)."""
    args = []
    for parent in reversed(Path(path).parents[:-1]):
        if str(parent) not in made:
            args += ["--perms", "0755", "--dir", str(parent)]
            made.add(str(parent))
    return args


def job_env(threads: int) -> dict[str, str]:
    """The whole environment a job sees: nothing of the grader's."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": "/tmp/home",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/cache/mpl",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TORCHINDUCTOR_CACHE_DIR": "/tmp/cache/inductor",
        "OMP_NUM_THREADS": str(threads),
        "IPYTHONDIR": "/tmp/home/.ipython",
        "XDG_CACHE_HOME": "/tmp/cache",
        "GLOO_SOCKET_IFNAME": "lo",  # the job's network namespace has only loopback
        "PYTHONPATH": package_path(),
    }


def isolation_warning(use_bwrap: bool) -> str | None:
    """A line saying what is missing from the sandbox, or None when all layers are available."""
    if use_bwrap and shutil.which("bwrap"):
        return None
    return (
        "WARNING: bubblewrap (bwrap) is not in use: jobs still get their own uid, namespaces and limits where "
        "the kernel allows, but can read every file the grader's uid can read (course sources, gradebook). "
        "Install it: apt-get install bubblewrap"
    )


def base_processes() -> int:
    """Tasks (processes and threads) this non-root uid already runs: they count against RLIMIT_NPROC."""
    if os.getuid() == 0:
        return 0
    import psutil

    me = os.getuid()
    return sum(
        p.info["num_threads"] or 1
        for p in psutil.process_iter(["uids", "num_threads"])
        if p.info["uids"] and p.info["uids"].real == me
    )


class Worker:
    """One sandbox with a warm zygote; runs jobs one at a time."""

    def __init__(
        self,
        slot: int,
        limits: Limits,
        threads: int,
        use_bwrap: bool = True,
        log: Path | None = None,
        warm: tuple[str, ...] = (),
    ) -> None:
        self.slot, self.limits, self.threads, self.warm = slot, limits, threads, warm
        self.use_bwrap = use_bwrap and shutil.which("bwrap") is not None
        # Only a run that chose no sandbox (labs check --no-sandbox, the instructor's own code) may go on
        # under the grader's uid when a separate one cannot work; labs grade never does.
        self.uid_optional = not use_bwrap
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.group: cgroups.Group | None = None
        self.limit_note = ""
        self.zygote: int | None = None  # its pid as the grader sees it, once ready

    def start(self) -> None:
        """Start the sandbox and wait until its zygote has imported torch."""
        self.spawn()
        self.wait_ready()

    def spawn(self) -> None:
        """Start the sandbox. bwrap dies with the *thread* that started it: call from a long-lived one."""
        zygote = [sys.executable, "-m", "graders.inside.zygote", *self.warm]
        etc = (
            data_fds(etc_files(FIRST_UID + self.slot if os.getuid() == 0 else os.getuid()))
            if self.use_bwrap
            else {}
        )
        cmd = bwrap_command(os.getuid() == 0, etc) + zygote if self.use_bwrap else zygote
        self.group, why = cgroups.create(f"labs-{os.getpid()}-{id(self):x}")
        self.limit_note = (
            self.group.describe()
            if self.group
            else (
                f"NOT ACTIVE: cgroups ({why}); the grader sums each job's processes every {watchdog.INTERVAL} s instead"
            )
        )
        cmd = self.group.enter_command(cmd) if self.group else cmd
        stderr = open(self.log, "ab") if self.log else subprocess.DEVNULL  # lives with the worker
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=None if self.use_bwrap else job_env(self.threads),
                cwd="/tmp" if not self.use_bwrap else None,
                pass_fds=tuple(etc.values()),
            )
        finally:
            for fd in etc.values():
                os.close(fd)

    def wait_ready(self) -> None:
        """Block until the zygote reports it has imported what jobs need."""
        ready = read_frame(self._pipes()[1])
        if ready is None or self.proc is None:
            raise RuntimeError(
                f"sandbox worker {self.slot} did not start (see {self.log or 'its stderr'})"
                + start_failure_hint(self.log)
            )
        if self.group:
            self.group.limit(self.limits.memory_bytes, self.limits.processes)
        set_oom_floor(self.proc.pid)
        self.zygote = self.proc.pid if not self.use_bwrap else find_zygote(self.proc.pid)

    def _watch(self) -> watchdog.Watchdog:
        kill = self.proc.kill if self.proc else (lambda: None)
        budget = watchdog.Budget(
            self.limits.cpu_seconds,
            0 if self.group else self.limits.memory_bytes,
            self.limits.wall_seconds + watchdog.WALL_GRACE,
        )
        measure = watchdog.group_usage(self.group) if self.group else watchdog.tree_usage(self.zygote)
        return watchdog.Watchdog(budget, measure, kill)

    def run(self, job: Job) -> JobOutcome:
        """Run ``job`` in a fresh jailed process; restarts the sandbox if it died."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        spec = JobSpec(
            list(job.cells),
            self.limits,
            FIRST_UID + self.slot,
            self.uid_optional,
            {**job_env(self.threads), **job.env},
            base_processes(),
            [f for f in readable_binds() if f == "/tmp" or f.startswith("/tmp/")],
        )
        probes = ProbeRequest(job.probes_source, job.probes_file, job.salt, job.traceback, job.probes_only)
        oom_kills = self.group.oom_kills() if self.group else 0
        watch, started = self._watch(), time.monotonic()
        stdin, stdout = self._pipes()
        try:
            write_frame(stdin, spec.to_frame())
            done = self._converse(stdin, stdout, probes.to_frame())
            result = read_frame(stdout) if done is not None else None
        except (OSError, ValueError, MemoryError):
            done, result = None, None
        finally:
            broken = watch.stop()
        if done is None or result is None:
            self.close()
            return JobOutcome(broken or Status.WORKER_DIED, seconds=round(time.monotonic() - started, 3))
        status = done.outcome.status
        if status != Status.OK and (broken or (self.group and self.group.oom_kills() > oom_kills)):
            done.outcome.status = broken or Status.MEMORY_LIMIT
        return completed(done, result)

    def _pipes(self) -> tuple[int, int]:
        """The running zygote's stdin and stdout descriptors."""
        if self.proc is None or self.proc.stdin is None or self.proc.stdout is None:
            raise RuntimeError(f"sandbox worker {self.slot} is not running")
        return self.proc.stdin.fileno(), self.proc.stdout.fileno()

    @staticmethod
    def _converse(stdin: int, stdout: int, probes: bytes) -> Done | None:
        """Frames from the supervisor until its final header; probes go in only when it asks."""
        asked = False
        while (frame := read_frame(stdout, limit=HEADER_BYTES)) is not None:
            said = supervisor_said(frame)
            if said.asks_for_probes and not asked:
                asked = True
                write_frame(stdin, probes)
            elif said.done is not None:
                return said.done
            else:
                return None
        return None

    def close(self) -> None:
        """Stop the sandbox (its jobs die with it) and delete its cgroup."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        if self.group:
            self.group.remove()
            self.group = None


def find_zygote(bwrap_pid: int) -> int | None:
    """The zygote's pid as the grader sees it (bwrap runs it two levels down)."""
    try:
        tree = psutil.Process(bwrap_pid).children(recursive=True)
    except psutil.Error:
        return None
    return next((p.pid for p in tree if _is_zygote(p) and not _is_zygote(p.parent())), None)


def _is_zygote(proc: psutil.Process | None) -> bool:
    try:
        return proc is not None and proc.cmdline()[1:3] == ["-m", "graders.inside.zygote"]
    except psutil.Error:
        return False


def set_oom_floor(pid: int) -> None:
    """As root: the sandbox's processes get the grader's own OOM score adjustment (0 at least).

    A value written with privilege is also the lowest that the process, and anything it forks, may set
    without privilege (the kernel's ``oom_score_adj_min``). Jobs raise theirs to 1000, the OOM killer's
    first choice; a job may come back down to the grader's level, never below it: a sandbox at -1000
    would let a job make itself unkillable and leave the grader to the OOM killer.
    """
    if os.getuid() != 0:
        return
    floor = str(max(0, int(Path("/proc/self/oom_score_adj").read_text())))
    try:
        tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return
    for proc in tree:
        try:
            Path(f"/proc/{proc.pid}/oom_score_adj").write_text(floor)
        except OSError:
            pass


def start_failure_hint(log: Path | None) -> str:
    """Why a sandbox did not start, when its log says so: ``: <last line>; <the fix>`` (else empty)."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() if log else []
    except OSError:
        return ""
    last = lines[-1] if lines else ""
    missing = next((p for p in PROJECT_PACKAGES if f"No module named '{p}" in last), None)
    if missing:
        return (
            f": {last.strip()}; the sandbox imports only what it binds ({', '.join(PROJECT_PACKAGES)} from "
            f"{package_path()}): is the project installed in the venv ({sys.executable})? pip install -e ."
        )
    return f": {last.strip()}" if last else ""
