"""Each student's home, and the exchange, on a filesystem of its own: a size limit no one else's writes share.

For each student an ext4 image ``ROOT/disks/home-<name>.img`` of ``--disk`` bytes, and for the exchange one of
:meth:`HubPlan.exchange_bytes`, each allocated in full when it is made (``posix_fallocate``: the host's disk holds
them whatever is written later), loop-mounted (``nosuid,nodev``) on ``ROOT/home/<name>`` and ``ROOT/exchange`` while
the hub runs. A student who fills her home gets ENOSPC in her home only: her classmates' homes, the exchange, the
hub's database and log are on other filesystems. One who fills the exchange (nbgrader wants it writable by everyone,
and it is one folder) stops submissions for everyone until the instructor removes what she wrote (her files, by
owner), but nothing else: a per-user share of it needs filesystem quotas (docs/hub.md, what the host must provide).
The instructor's home stays on the host's filesystem, unlimited.

:func:`mount_all` makes what is missing and mounts every image (at start-up, as root, before the folders' modes are
set); :func:`unmount_under` unmounts whatever is mounted under the class's folder (when the hub stops, and before
``--remove-class`` removes it). An image made before keeps its size and contents: the homes outlive a run of the
hub, as the accounts do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from labs.hub.plan import HubPlan

MIB = 1 << 20


class DiskError(RuntimeError):
    """An image cannot be made or mounted (no loop devices, no room, a home that already holds files)."""


@dataclass(frozen=True)
class Disk:
    """One image and where it is mounted; ``owner``: the unix user whose folder its top is (None: root's)."""

    image: Path
    mount: Path
    size: int
    owner: str | None


def disks_possible() -> str | None:
    """Why homes cannot get a filesystem of their own here (no mkfs.ext4, no loop devices), or None."""
    if not shutil.which("mkfs.ext4"):
        return "mkfs.ext4 is missing (apt-get install e2fsprogs)"
    if not Path("/dev/loop-control").exists():
        return "the host has no loop devices (/dev/loop-control; in a container: --device /dev/loop-control)"
    return None


def planned(plan: HubPlan) -> list[Disk]:
    """Every student's home and the exchange (nothing when ``plan.disk_bytes`` is 0)."""
    if not plan.disk_bytes:
        return []
    homes = [
        Disk(plan.disks / f"home-{name}.img", plan.home(name), plan.disk_bytes, name)
        for name in plan.students
    ]
    return [*homes, Disk(plan.disks / "exchange.img", plan.exchange, plan.exchange_bytes, None)]


def room_needed(plan: HubPlan) -> int:
    """Bytes the images not made yet will take from the host's disk."""
    return sum(disk.size for disk in planned(plan) if not disk.image.exists())


def check_room(plan: HubPlan) -> None:
    """DiskError unless the images still to make fit in 90 % of the free space of the disk holding ``--root``."""
    needed = room_needed(plan)
    if not needed:
        return
    folder = plan.root
    while not folder.exists():
        folder = folder.parent
    info = os.statvfs(folder)
    free = info.f_bavail * info.f_frsize
    if needed > free * 0.9:
        raise DiskError(
            f"the students' homes and the exchange need {needed / (1 << 30):.1f} GiB of disk "
            f"({plan.disk_bytes / (1 << 30):.2f} GiB each, the exchange "
            f"{plan.exchange_bytes / (1 << 30):.2f} GiB) and {folder} has {free / (1 << 30):.1f} GiB "
            "free: a smaller --disk, or --disk 0 (homes on the host's filesystem, without a limit)"
        )


def mounted() -> dict[str, str]:
    """Mount point -> source of every mount in this namespace (/proc/self/mountinfo, escapes undone)."""
    found = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        after = fields.index("-")
        found[_unescape(fields[4])] = _unescape(fields[after + 2])
    return found


def _unescape(text: str) -> str:
    return text.encode().decode("unicode_escape") if "\\" in text else text


def allocate(image: Path, size: int, create: bool = False) -> None:
    """Every block of ``image`` up to ``size`` allocated on the host's disk (again, for one made before: a trim of
    its filesystem, e.g. a host's ``fstrim -a``, hands free blocks back); DiskError if there is no room."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | (os.O_CREAT | os.O_EXCL if create else 0)
    fd = os.open(image, flags, 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as err:
        if create:
            image.unlink()
        raise DiskError(f"no room for {image} ({size // MIB} MiB): {err}") from None
    finally:
        os.close(fd)


def make_image(disk: Disk) -> None:
    """The image, allocated in full (and kept so: mkfs.ext4 would discard the blocks of a file), root's alone
    (0600), with an empty ext4 (no blocks reserved for root)."""
    disk.image.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    disk.image.parent.chmod(0o700)
    allocate(disk.image, disk.size, create=True)
    result = subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "nodiscard", "-L", disk.image.stem[:16], str(disk.image)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        disk.image.unlink()
        raise DiskError(f"mkfs.ext4 {disk.image}: {result.stderr.strip()}")


def mount(disk: Disk) -> None:
    """Make the image if it is missing and mount it on its folder (already mounted: left as it is); its top then
    belongs to its owner, mode 0700 (a home), or stays root's (the exchange: labs.hub.users sets its mode)."""
    if str(disk.mount) in mounted():
        return
    disk.mount.mkdir(parents=True, exist_ok=True)
    fresh = not disk.image.exists()
    if fresh and any(disk.mount.iterdir()):
        raise DiskError(
            f"{disk.mount} holds files and has no image of its own yet ({disk.image}): move them "
            "out (they would be hidden under it), or run labs hub with --disk 0"
        )
    if fresh:
        make_image(disk)
    else:
        allocate(disk.image, disk.image.stat().st_size)
    result = subprocess.run(
        ["mount", "-o", "loop,nosuid,nodev", str(disk.image), str(disk.mount)], capture_output=True, text=True
    )
    if result.returncode != 0:
        raise DiskError(f"mount {disk.image} on {disk.mount}: {result.stderr.strip()}")
    if fresh:
        lost = (
            disk.mount / "lost+found"
        )  # mkfs's, empty: nothing of the class's (e2fsck makes it again if needed)
        if lost.is_dir() and not any(lost.iterdir()):
            lost.rmdir()
    if disk.owner is not None:
        import pwd

        entry = pwd.getpwnam(disk.owner)
        os.chown(disk.mount, entry.pw_uid, entry.pw_gid)
        disk.mount.chmod(0o700)


def mount_all(plan: HubPlan) -> list[Disk]:
    """Every image of the plan mounted (made first where missing); on an error, what this mounted is unmounted."""
    disks = planned(plan)
    if not disks:
        return []
    check_room(plan)
    try:
        for disk in disks:
            mount(disk)
    except DiskError:
        unmount_under(plan.root)
        raise
    return disks


def unmount_under(root: Path) -> list[str]:
    """Unmount everything mounted under ``root`` (the deepest first; lazily if busy; a loop device goes with its
    mount); returns the mount points."""
    top = str(root.resolve())
    points = sorted((p for p in mounted() if p.startswith(top + "/")), key=len, reverse=True)
    for point in points:
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True)
    return points
