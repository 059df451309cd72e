"""Limits on a worker's sandbox as a whole (every process a submission starts, together), from the
kernel's control groups: one group per worker under the grader's own, v1 (memory, pids, cpuacct)
or v2 (memory, pids, cpu). A worker runs one job at a time, so the group's use above what its idle
zygote holds is the job's.

Without write access to a cgroup hierarchy (not root, or a container that hides it), :func:`create`
says why and the grader falls back on :mod:`graders.grader.sandbox.watchdog`.

Under a batch scheduler that already confines the grader (a Slurm task with task/cgroup: its memory group is
``/slurm*/uid_U/job_J/step_S/task_T`` on v1, ``.../job_J/step_S/...`` on v2), the groups are made inside the
task's own, so the job's limits bound every sandbox too, and :meth:`Group.describe` names the job's group.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from zygote.client import pid_alive

ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpuacct")
# A Slurm job's cgroup: slurm (or slurm_<node>) / uid_U / job_J on v1; slurmstepd.scope / job_J on v2.
SLURM_GROUP = re.compile(r"/slurm[^/]*/(?:uid_\d+/)?job_(\d+)(?:/|$)")
# A worker's group: labs-<the grader's pid>-<the worker's id> (graders.grader.sandbox.worker).
WORKER_GROUP = re.compile(r"labs-(\d+)-[0-9a-f]+")
_swept: set[Path] = set()


@dataclass
class Group:
    """One worker's control groups; ``dirs`` maps a controller (or "unified") to its folder."""

    dirs: dict[str, Path]
    version: int
    within: str = (
        ""  # the scheduler's group the sandboxes nest in ("Slurm job 12 (memory:/slurm/...)"), if any
    )

    def enter_command(self, cmd: list[str]) -> list[str]:
        """``cmd`` run by a shell that first moves itself into the group (its children follow)."""
        moves = "; ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in self.dirs.values())
        return ["/bin/sh", "-c", f'{moves} && exec "$@"', "sh", *cmd]

    def limit(self, memory_bytes: int, processes: int) -> None:
        """Allow the group what it holds now (the idle zygote) plus ``memory_bytes`` and ``processes``."""
        if self.version == 1:
            _write(self.dirs["memory"] / "memory.limit_in_bytes", self.memory() + memory_bytes)
            _write(self.dirs["pids"] / "pids.max", self.tasks() + processes)
        else:
            _write(self.dirs["unified"] / "memory.max", self.memory() + memory_bytes)
            _write(self.dirs["unified"] / "pids.max", self.tasks() + processes)

    def memory(self) -> int:
        """Bytes charged to the group now."""
        if self.version == 1:
            return int(_read(self.dirs["memory"] / "memory.usage_in_bytes"))
        return int(_read(self.dirs["unified"] / "memory.current"))

    def tasks(self) -> int:
        """Processes and threads in the group now."""
        folder = self.dirs["pids" if self.version == 1 else "unified"]
        return int(_read(folder / "pids.current"))

    def cpu_seconds(self) -> float:
        """CPU time used by every process that ever ran in the group."""
        if self.version == 1:
            return int(_read(self.dirs["cpuacct"] / "cpuacct.usage")) / 1e9
        return _field(self.dirs["unified"] / "cpu.stat", "usage_usec") / 1e6

    def oom_kills(self) -> int:
        """How many of the group's processes the kernel killed for going over its memory limit."""
        if self.version == 1:
            return _field(self.dirs["memory"] / "memory.oom_control", "oom_kill")
        return _field(self.dirs["unified"] / "memory.events", "oom_kill")

    def remove(self, wait: float = 1.0) -> None:
        """Delete the groups, waiting up to ``wait`` seconds for their processes to leave them.

        A killed sandbox's processes leave a moment after bwrap exits. The kernel lets a group go as soon
        as none is listed in it, while ``pids.current`` still counts the last one being torn down (about
        a second longer), so this retries the removal itself rather than waiting for that count.
        """
        deadline = time.monotonic() + wait
        left = list(self.dirs.values())
        while left := [folder for folder in left if not _removed(folder)]:
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)

    def describe(self) -> str:
        """One line for the run's isolation summary."""
        line = f"cgroup v{self.version} per sandbox: memory and processes of a job together, CPU summed"
        return f"{line}; nested in {self.within}, whose limits bound them all" if self.within else line


def _removed(folder: Path) -> bool:
    try:
        folder.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _read(path: Path) -> str:
    return path.read_text().strip()


def _write(path: Path, value: int) -> None:
    path.write_text(str(value))


def _field(path: Path, name: str) -> int:
    for line in _read(path).splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return int(value)
    return 0


def own_group(controller: str, proc_cgroup: str) -> str | None:
    """This process's group path in ``controller``'s hierarchy ("" for v2), from /proc/self/cgroup."""
    for line in proc_cgroup.splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(",") or (controller == "" and names == ""):
            return path
    return None


def scheduler_group(proc_cgroup: str) -> str:
    """The Slurm job cgroup this process runs in, as ``Slurm job J (controller:path)``, or "" outside one.

    Only the controllers the grader's groups use count (v1: memory, pids, cpuacct; v2: the unified tree):
    a cgroup Slurm made elsewhere (cpuset, freezer) does not confine the sandboxes' groups.
    """
    for line in proc_cgroup.splitlines():
        _, names, path = line.split(":", 2)
        controllers = names.split(",")
        if names and not set(controllers) & set(V1_CONTROLLERS):
            continue
        found = SLURM_GROUP.search(path)
        if found:
            return f"Slurm job {found[1]}'s cgroup ({names or 'v2'}:{path})"
    return ""


def sweep_stale(base: Path) -> list[Path]:
    """Remove the empty worker groups in ``base`` whose grader is gone (killed before it could remove
    them: SIGKILL, a scheduler's cancel), once per base and process; returns those removed. A group that
    still lists a process, or whose grader's pid is alive, is left alone."""
    if base in _swept:
        return []
    _swept.add(base)
    removed = []
    for folder in base.glob("labs-*"):
        found = WORKER_GROUP.fullmatch(folder.name)
        if found and folder.is_dir() and not pid_alive(int(found[1])) and _removed(folder):
            removed.append(folder)
    return removed


def create(name: str) -> tuple[Group | None, str]:
    """A new group ``name`` under the grader's own, or None and why it cannot be made."""
    if os.environ.get("LABS_CGROUPS") == "0":
        return None, "disabled (LABS_CGROUPS=0)"
    proc_cgroup = Path("/proc/self/cgroup").read_text()
    if (ROOT / "cgroup.controllers").is_file():
        return _create_v2(name, proc_cgroup)
    return _create_v1(name, proc_cgroup)


def _create_v1(name: str, proc_cgroup: str) -> tuple[Group | None, str]:
    dirs: dict[str, Path] = {}
    for controller in V1_CONTROLLERS:
        own = own_group(controller, proc_cgroup)
        base = ROOT / controller / (own or "/").lstrip("/")
        if own is None or not base.is_dir():
            base = ROOT / controller
        sweep_stale(base)
        folder = base / name
        try:
            folder.mkdir(exist_ok=True)
        except OSError as err:
            Group(dirs, 1).remove(wait=0)
            return None, f"cannot create {folder} ({err.strerror})"
        dirs[controller] = folder
    return Group(dirs, 1, scheduler_group(proc_cgroup)), ""


def _create_v2(name: str, proc_cgroup: str) -> tuple[Group | None, str]:
    own = own_group("", proc_cgroup) or "/"
    base = ROOT / own.lstrip("/")
    if not {"memory", "pids"} <= set(_read(base / "cgroup.controllers").split()):
        return None, f"{base}: memory and pids controllers not delegated"
    sweep_stale(base)
    folder = base / name
    try:
        folder.mkdir(exist_ok=True)
        if not {"memory", "pids"} <= set(_read(folder / "cgroup.controllers").split()):
            _write_text(base / "cgroup.subtree_control", "+memory +pids +cpu")
    except OSError as err:
        try:
            folder.rmdir()
        except OSError:
            pass
        return None, f"cannot use {folder} ({err.strerror})"
    return Group({"unified": folder}, 2, scheduler_group(proc_cgroup)), ""


def _write_text(path: Path, text: str) -> None:
    path.write_text(text)
