"""What a sandboxed job process does to itself before running a submission: its own uid, private
namespaces, a fresh /tmp, no capabilities, and resource limits. Linux only, through libc.

Called in a process forked from the warm zygote (:mod:`graders.inside.zygote`); see :func:`enter`.
"""

from __future__ import annotations

import ctypes
import os
import resource
import stat
import sys
from pathlib import Path

from graders.boundary.protocol import Limits

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x08000000, 0x10000000, 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 0x1, 0x2, 0x4, 0x8, 0x20, 0x1000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
O_PATH = 0o10000000
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38
CAP_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def unreadable_ancestor(path: str) -> str | None:
    """The first folder on the way to ``path`` that another uid cannot enter, or None."""
    current = Path(path).resolve()
    for folder in [*reversed(current.parents), current]:
        if not folder.stat().st_mode & stat.S_IXOTH:
            return str(folder)
    return None


def drop_to_uid(uid: int) -> str:
    """As root: become ``uid`` for real (so the process-count limit applies). Else stay as is.

    Refuses (raises) when ``uid`` could not read the Python installation: every import the job had not
    made yet would fail. Inside bubblewrap the installation is bound where any uid can reach it; without
    it, an interpreter under a private folder (``/root/.pyenv``) cannot be shared with another uid.
    """
    if os.getuid() != 0:
        return f"runs as the grader's own uid {os.getuid()} (not root: no separate uid)"
    blocked = unreadable_ancestor(sys.base_prefix) or unreadable_ancestor(sys.prefix)
    if blocked:
        raise PermissionError(f"uid {uid} could not read the Python installation ({blocked} is private)")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    return f"uid {uid}"


def private_namespaces(network: bool) -> str:
    """New user, mount, pid and IPC namespaces (and network, when asked) for this process."""
    uid, gid = os.getuid(), os.getgid()
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # its /proc files become its own: it writes its uid_map
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | (CLONE_NEWNET if network else 0)
    _check(_libc.unshare(flags), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as file:
            file.write(text)
    return "user, mount, pid, ipc" + (", network" if network else "") + " namespaces"


def fresh_tmp(size_bytes: int, keep: list[str]) -> str:
    """Mount an empty, size-capped /tmp (and /dev/shm) and, where allowed, its own /proc; cd there.

    ``keep``: folders under /tmp the job must still see (a course checked out under /tmp: its venv
    and packages), bound read-only into the new /tmp.
    """
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    kept = {folder: os.open(folder, O_PATH) for folder in keep if os.path.isdir(folder)}
    options = f"size={size_bytes},mode=0700".encode()
    _check(_libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, options), "mount /tmp")
    for folder, fd in kept.items():
        os.makedirs(folder, mode=0o755, exist_ok=True)
        _check(
            _libc.mount(f"/proc/self/fd/{fd}".encode(), folder.encode(), None, MS_BIND | MS_REC, None),
            f"keep {folder}",
        )
        _libc.mount(None, folder.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)
        os.close(fd)
    if os.path.isdir("/dev/shm"):
        _libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, options)
    own_proc = _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) == 0
    for folder in ("/tmp/home", "/tmp/work", "/tmp/cache"):
        os.makedirs(folder, exist_ok=True)
    os.chdir("/tmp/work")
    # Where containers mask parts of /proc, a new one is refused: the sandbox's own (its pids only) stays.
    return "private /tmp" + (" and /proc" if own_proc else "")


def drop_capabilities() -> str:
    """No capabilities left, in any namespace, and none to gain through exec."""
    header = (ctypes.c_uint32 * 2)(CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    return "no capabilities"


def set_limits(limits: Limits, base_processes: int = 0) -> str:
    """CPU, address space, processes, file size, open files; no core dumps.

    ``base_processes``: tasks the uid already runs elsewhere (they count against the limit too).
    """
    with open("/proc/self/status") as status:
        mapped = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    for kind, value in (
        (resource.RLIMIT_CPU, limits.cpu_backstop_seconds),
        (resource.RLIMIT_AS, mapped + limits.memory_bytes),
        (resource.RLIMIT_NPROC, limits.processes + base_processes),
        (resource.RLIMIT_FSIZE, limits.file_bytes),
        (resource.RLIMIT_NOFILE, 1024),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(kind, (value, value))
    with open("/proc/self/oom_score_adj", "w") as adj:
        adj.write(
            "1000"
        )  # over a memory limit, the kernel kills the job first (raising it needs no privilege)
    return (
        f"limits: {limits.cpu_seconds} s CPU, {limits.memory_bytes >> 20} MiB memory, "
        f"{limits.processes} processes, {limits.file_bytes >> 20} MiB files"
    )
