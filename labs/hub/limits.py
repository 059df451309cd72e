"""Per-student limits: one control group per student holding every process of theirs (server, kernels,
terminals), with `graders.grader.sandbox.cgroups`' :class:`~graders.grader.sandbox.cgroups.Group` (v1 or v2).

- memory: ``memory.limit_in_bytes`` (v1) / ``memory.max`` (v2); over it the kernel's OOM killer stops the
  biggest process of the group, the student's own kernel that allocated it, and their server restarts it
  ("kernel died"); nobody else's memory is touched.
- processes: ``pids.max``; a fork bomb gets EAGAIN inside the group. :meth:`StudentGroup.check` (called every
  second by the spawner) then kills every process of the group but the server, which tells the student that
  their kernel died and starts a new one.
- CPU: a quota of ``cpus`` cores (``cpu.cfs_quota_us`` / ``cpu.max``), so one student's training shares the
  machine with the others instead of taking it.

The groups live under the hub's own (``/sys/fs/cgroup/<controller>/<hub's group>/<class>/<student>``).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from graders.grader.sandbox.cgroups import ROOT, Group, own_group
from labs.hub.plan import Limits

V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
PERIOD_US = 100_000


def _base(controller: str, proc_cgroup: str) -> Path:
    own = own_group(controller, proc_cgroup)
    base = ROOT / controller / (own or "/").lstrip("/")
    return base if own is not None and base.is_dir() else ROOT / controller


def class_folders(class_name: str) -> list[Path]:
    """The class's cgroup folder in each hierarchy (v2: one), whether it exists or not."""
    proc_cgroup = Path("/proc/self/cgroup").read_text()
    if (ROOT / "cgroup.controllers").is_file():
        return [ROOT / (own_group("", proc_cgroup) or "/").lstrip("/") / class_name]
    return [_base(c, proc_cgroup) / class_name for c in V1_CONTROLLERS]


def create_group(class_name: str, student: str) -> tuple[Group | None, str]:
    """``<class>/<student>`` under the hub's own groups, or None and why not."""
    if os.environ.get("LABS_CGROUPS") == "0":
        return None, "disabled (LABS_CGROUPS=0)"
    folders = class_folders(class_name)
    dirs: dict[str, Path] = {}
    try:
        if len(folders) == 1:  # v2: the class's folder passes memory, pids and cpu down to the students'
            folders[0].mkdir(parents=True, exist_ok=True)
            wanted = {"memory", "pids", "cpu"}
            for folder in (folders[0].parent, folders[0]):
                have = set((folder / "cgroup.subtree_control").read_text().split())
                if not wanted <= have:
                    (folder / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(wanted)))
            dirs["unified"] = folders[0] / student
            dirs["unified"].mkdir(exist_ok=True)
            return Group(dirs, 2), ""
        for controller, folder in zip(V1_CONTROLLERS, folders, strict=True):
            (folder / student).mkdir(parents=True, exist_ok=True)
            dirs[controller] = folder / student
        return Group(dirs, 1), ""
    except OSError as err:
        Group(dirs, 1).remove(wait=0)
        return None, f"cannot create the cgroup of {student} under {folders[0].parent} ({err.strerror})"


@dataclass
class StudentGroup:
    """One student's control group and their limits."""

    group: Group
    limits: Limits
    killed: int = 0  # fork bombs stopped so far

    def apply(self) -> None:
        """Write the memory, process and CPU limits."""
        quota = max(1000, int(self.limits.cpus * PERIOD_US))
        if self.group.version == 1:
            (self.group.dirs["memory"] / "memory.limit_in_bytes").write_text(str(self.limits.memory_bytes))
            swap = self.group.dirs["memory"] / "memory.memsw.limit_in_bytes"  # memory + swap, where accounted
            if swap.exists():
                swap.write_text(str(self.limits.memory_bytes))
            (self.group.dirs["pids"] / "pids.max").write_text(str(self.limits.processes))
            (self.group.dirs["cpu"] / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.group.dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            folder = self.group.dirs["unified"]
            (folder / "memory.max").write_text(str(self.limits.memory_bytes))
            swap = folder / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
            (folder / "pids.max").write_text(str(self.limits.processes))
            (folder / "cpu.max").write_text(f"{quota} {PERIOD_US}")

    def join(self) -> None:
        """Move the calling process into the group (its children follow): run in the server's process
        before it drops to the student's uid."""
        for folder in self.group.dirs.values():
            (folder / "cgroup.procs").write_text(str(os.getpid()))

    def pids(self) -> list[int]:
        """The processes in the group now."""
        folder = self.group.dirs["pids" if self.group.version == 1 else "unified"]
        try:
            return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def at_process_limit(self) -> bool:
        """True when the group holds its whole ``pids.max`` (less two: a thread starting or ending)."""
        try:
            return self.group.tasks() >= self.limits.processes - 2
        except (FileNotFoundError, ValueError):
            return False

    def kill(self, spare: int | None = None) -> int:
        """SIGKILL every process of the group but ``spare`` (the student's server); returns how many.

        Repeated until none is left, as a fork bomb forks while it is being killed."""
        killed: set[int] = set()
        for _ in range(100):
            victims = [pid for pid in self.pids() if pid != spare]
            if not victims or set(victims) <= killed:  # only the dead left, waiting for their parent
                break
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
        return len(killed)

    def check(self, spare: int | None) -> str | None:
        """Stop a fork bomb: at the process limit, kill everything but the server; what happened, or None."""
        if not self.at_process_limit():
            return None
        self.killed += 1
        count = self.kill(spare)
        return (
            f"reached its limit of {self.limits.processes} processes: {count} processes killed "
            "(the server stays; it restarts the kernel)"
        )

    def oom_kills(self) -> int:
        """Processes of the group the kernel killed for going over the memory limit."""
        try:
            return self.group.oom_kills()
        except (FileNotFoundError, ValueError):
            return 0

    def remove(self) -> None:
        """Kill what is left in the group and delete it."""
        self.kill()
        self.group.remove(wait=5.0)


def remove_class_groups(class_name: str) -> None:
    """Delete the class's cgroups (every student's, then the class's own), killing what is left in them."""
    for folder in class_folders(class_name):
        if not folder.is_dir():
            continue
        for student in [p for p in folder.iterdir() if p.is_dir()]:
            for pid in (student / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for student in [p for p in folder.iterdir() if p.is_dir()]:
            Group({"x": student}, 1).remove(wait=5.0)
        Group({"x": folder}, 1).remove(wait=1.0)
