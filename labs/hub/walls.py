"""What every server of a class does to itself before it becomes its person's unix user (the spawner's
``preexec_fn``, still root): a mount namespace of its own with an empty, size-capped /tmp, /var/tmp and /dev/shm
(tmpfs, the person's alone), and, for a student, a file-size limit they cannot raise.

Nobody else's processes see that /tmp, so no one can create a classmate's ``/tmp/torchinductor_<user>`` (or any
other cache at a predictable temp path) before them, nor read what their kernels leave there. What the tmpfs holds
is memory, charged to the person's memory cgroup (:mod:`labs.hub.limits`): a student who fills it gets ENOSPC,
and no one else's disk or memory is touched. Folders the server needs that live under one of those paths (a
class made under /tmp: its homes, the venv) are bound back into the new one, as the grading sandbox does
(:func:`graders.inside.jail.fresh_tmp`).
"""

from __future__ import annotations

import os
import resource
import subprocess

from graders.inside import jail

# Each a tmpfs of the server's own (/var/lock is /run/lock).
PRIVATE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def under_private(path: str) -> bool:
    """Whether ``path`` lies under one of the folders each server gets afresh (so it must be bound back in)."""
    return any(path == p or path.startswith(p + "/") for p in PRIVATE)


def private_tmp(uid: int, gid: int, size_bytes: int, keep: list[str]) -> None:
    """In a new mount namespace: a tmpfs of ``size_bytes`` (mode 0700, owned by ``uid``) on each of
    :data:`PRIVATE`, and the folders ``keep`` bound back in (the spawner then changes to the home)."""
    libc, check = jail._libc, jail._check
    check(libc.unshare(jail.CLONE_NEWNS), "unshare the mounts")
    check(libc.mount(b"none", b"/", None, jail.MS_REC | jail.MS_PRIVATE, None), "make mounts private")
    kept = {folder: os.open(folder, jail.O_PATH) for folder in keep if os.path.isdir(folder)}
    modes = {parent: os.stat(parent).st_mode & 0o7777 for folder in kept for parent in _between(folder)}
    options = f"size={size_bytes},mode=0700,uid={uid},gid={gid}".encode()
    for folder in PRIVATE:
        if os.path.isdir(folder):
            check(
                libc.mount(b"tmpfs", folder.encode(), b"tmpfs", jail.MS_NOSUID | jail.MS_NODEV, options),
                f"mount a private {folder}",
            )
    for folder, fd in kept.items():
        for parent in [*_between(folder), folder]:
            if not os.path.isdir(parent):
                os.mkdir(parent)
                os.chmod(parent, modes.get(parent, 0o755))  # as passable, and as closed, as the real one
        check(
            libc.mount(
                f"/proc/self/fd/{fd}".encode(), folder.encode(), None, jail.MS_BIND | jail.MS_REC, None
            ),
            f"keep {folder}",
        )
        os.close(fd)


def limit_file_size(file_bytes: int) -> None:
    """No file written by this process or its children grows past ``file_bytes`` (EFBIG: Python ignores
    SIGXFSZ); the hard limit too, so the student cannot raise it. No core dumps."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _between(folder: str) -> list[str]:
    """The folders between the private one holding ``folder`` and ``folder`` itself."""
    parts = folder.split("/")
    paths = ["/".join(parts[:n]) for n in range(2, len(parts))]
    return [p for p in paths if under_private(p) and p not in PRIVATE]


def private_tmp_possible() -> str | None:
    """Why a server could not get its private /tmp here (no mount namespaces: a container without
    CAP_SYS_ADMIN), or None: tried in a child process that runs ``true``."""
    try:
        subprocess.run(
            ["true"], preexec_fn=lambda: private_tmp(os.getuid(), os.getgid(), 1 << 20, []), check=True
        )
    except (subprocess.SubprocessError, OSError) as err:
        return (
            f"each server's private /tmp needs a mount namespace of its own, which this host refuses ({err})"
        )
    return None
