"""One unix user per person, and who may read what: the accounts, homes and folder modes of a class.

:func:`create_accounts` makes each person of the plan a unix user (``useradd``, a group of their own, the
comment :func:`marker` so that :func:`remove_accounts` removes only this class's), with the home
``ROOT/home/<name>`` at mode 0700. :func:`lock_down` then sets who may read what:

- ``ROOT``, ``ROOT/home``, ``ROOT/config``: root, 0711 (passable, not listable);
- ``ROOT/home/<name>``: the person, 0700;
- ``ROOT/config/<name>``: root, 0755, files 0644 (their Jupyter config, not theirs to change);
- ``ROOT/state`` (database, cookie secret, passwords) and the hub's log: root, 0700 / 0600;
- ``ROOT/disks`` (the images of the students' homes and the exchange, :mod:`labs.hub.disks`): root, 0700;
- ``ROOT/exchange``: root, 1777 (nbgrader wants 0777; sticky, so no one renames or replaces the course in it);
- ``ROOT/exchange/pytorch-labs`` and its ``outbound``, ``inbound``, ``feedback``: the instructor, nbgrader's modes,
  made here, before any student exists (:func:`make_exchange_course`);
- the course: root:instructor, 0750 (the instructor reads it; students do not);
- ``--grading`` and the release build: the instructor, 0700 (formgrader and `labs` run as the instructor);
- every folder of this checkout but the packages students need (``labutils``, ``labs``, ``graders``, ``zygote``) and
  the venv: root:instructor, 0750 (sources, tests, history, ``build/``'s caches and gradebooks hold every
  solution); in a folder on the way to the class's own (``build/``), each folder but those.

Only each folder's own mode changes (not what is inside), and :func:`restore` puts back what
:func:`lock_down` found when the hub stops.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from graders.nbgrader.course_root import COURSE_ID
from labs.hub.disks import unmount_under
from labs.hub.plan import CHECKOUT, HubPlan, class_name


class AccountError(RuntimeError):
    """A person's unix account cannot be made (taken by someone else, or useradd failed)."""


def marker(plan: HubPlan | Path) -> str:
    """The comment (GECOS) of this class's accounts (a plan, or its root): how :func:`remove_accounts` knows them."""
    return f"labs hub {class_name(plan if isinstance(plan, Path) else plan.root)}"


def existing(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def create_accounts(plan: HubPlan) -> list[str]:
    """A unix user for each person, with home ``ROOT/home/<name>`` (0700, theirs); returns those created now.

    An account that this class made before is kept as it is; a name taken by anyone else is an error."""
    comment = marker(plan)
    created = []
    (plan.root / "home").mkdir(parents=True, exist_ok=True)
    for name in plan.users:
        home = plan.home(name)
        found = existing(name)
        if found is not None and found.pw_gecos != comment:
            raise AccountError(
                f"the unix user {name} exists and is not this class's ({found.pw_gecos!r}): "
                "give the person another name in the class list"
            )
        if found is None:
            result = subprocess.run(
                [
                    "useradd",
                    "--home-dir",
                    str(home),
                    "--no-create-home",
                    "--shell",
                    "/bin/bash",
                    "--comment",
                    comment,
                    "--user-group",
                    name,
                ],
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                raise AccountError(f"useradd {name}: {result.stderr.strip()}")
            created.append(name)
        entry = pwd.getpwnam(name)
        home.mkdir(exist_ok=True)
        os.chown(home, entry.pw_uid, entry.pw_gid)
        home.chmod(0o700)
    return created


def class_accounts(comment: str) -> list[str]:
    """The unix users whose comment is ``comment``."""
    return sorted(entry.pw_name for entry in pwd.getpwall() if entry.pw_gecos == comment)


def stop_processes(uids: set[int], wait: float = 10) -> None:
    """SIGKILL every process of these uids (a student's server, kernels, terminals) and wait for them."""
    found = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real in uids]
    for process in found:
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(found, timeout=wait)


def remove_accounts(comment: str) -> list[str]:
    """Remove every unix user (and their group) whose comment is ``comment``, their processes first; returns
    them. Their homes are the class's folder's, removed with it."""
    names = class_accounts(comment)
    stop_processes({pwd.getpwnam(n).pw_uid for n in names})
    for name in names:
        for _attempt in range(3):
            result = subprocess.run(["userdel", name], capture_output=True, text=True)
            if result.returncode == 0 or existing(name) is None:
                break
            time.sleep(0.5)  # a process of theirs still exiting
        try:
            grp.getgrnam(name)
            subprocess.run(["groupdel", name], capture_output=True, text=True)
        except KeyError:
            pass
    return names


@dataclass(frozen=True)
class Saved:
    """A folder's owner and mode as :func:`lock_down` found them."""

    path: Path
    uid: int
    gid: int
    mode: int


def _set(path: Path, uid: int, gid: int, mode: int, saved: list[Saved]) -> None:
    info = path.stat()
    saved.append(Saved(path, info.st_uid, info.st_gid, info.st_mode & 0o7777))
    os.chown(path, uid, gid)
    path.chmod(mode)


# What of this checkout students' servers and kernels import (the editable install maps these packages here), and
# the grading sandbox's jobs too; none holds a solution. Besides them only the venv, if it lives here, stays open.
STUDENTS_NEED = ("labutils", "labs", "graders", "zygote")


def private_paths(plan: HubPlan) -> list[Path]:
    """What the instructor may read and students may not: the course, and every folder of this checkout but the
    packages students need and the venv (its sources, tests, git history, docs, caches: `build/`'s executed
    notebooks, `labs check`'s gradebooks, the kernels' history...); a folder on the way to the class's own folders
    (``build/`` holding ``build/hub``) stays open, each other folder in it is closed. Whichever exist, the class's
    own folders (their modes are set apart) left out."""
    own = (plan.root, plan.grading)
    needed = {CHECKOUT / name for name in STUDENTS_NEED}
    if _holds(CHECKOUT, plan.python_bin):
        needed.add(CHECKOUT / plan.python_bin.relative_to(CHECKOUT).parts[0])
    candidates = [plan.course]
    for entry in _folders(CHECKOUT):
        if entry in needed or entry.name.endswith(".egg-info"):
            continue
        on_the_way = any(_holds(entry, p) for p in own)
        candidates += _folders(entry) if on_the_way else [entry]
    unique = []
    for path in candidates:
        inside = any(_holds(path, p) or _holds(p, path) for p in own)
        if path.exists() and path not in unique and not inside:
            unique.append(path)
    return unique


def _folders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())


def _holds(folder: Path, path: Path) -> bool:
    return path == folder or folder in path.parents


def unreachable(path: Path) -> Path | None:
    """The first folder above ``path`` that other users cannot pass through (mode without o+x), if any."""
    for folder in reversed(path.parents):
        if not folder.stat().st_mode & 0o001:
            return folder
    return None


def lock_down(plan: HubPlan) -> list[Saved]:
    """Set the owners and modes of the module's table; returns what they were (for :func:`restore`)."""
    saved: list[Saved] = []
    instructor = pwd.getpwnam(plan.instructor)
    for folder in (plan.root, plan.root / "home", plan.root / "config"):
        folder.mkdir(parents=True, exist_ok=True)
        _set(folder, 0, 0, 0o711, saved)
    plan.state.mkdir(parents=True, exist_ok=True)
    _set(plan.state, 0, 0, 0o700, saved)
    if plan.disks.exists():
        _set(plan.disks, 0, 0, 0o700, saved)
    plan.exchange.mkdir(parents=True, exist_ok=True)
    _set(plan.exchange, 0, 0, 0o1777, saved)
    make_exchange_course(plan.exchange / COURSE_ID, instructor)
    for name in plan.users:
        folder = plan.user_config(name)
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, 0, 0)
            path.chmod(0o755 if path.is_dir() else 0o644)
    plan.grading.mkdir(parents=True, exist_ok=True)  # formgrader and `labs` run as the instructor
    for path in plan.grading.rglob("*"):
        os.chown(path, instructor.pw_uid, instructor.pw_gid, follow_symlinks=False)
    _set(plan.grading, instructor.pw_uid, instructor.pw_gid, 0o700, saved)
    for path in private_paths(plan):
        _set(path, path.stat().st_uid, instructor.pw_gid, 0o750, saved)
    return saved


# nbgrader's own modes for the course's folders in the exchange (ExchangeReleaseAssignment.init_dest, feedback)
EXCHANGE_MODES = {"": 0o755, "outbound": 0o755, "inbound": 0o2733, "feedback": 0o711}


def make_exchange_course(course: Path, instructor: pwd.struct_passwd) -> None:
    """The course's folder in the exchange and its outbound, inbound and feedback folders, the instructor's with
    nbgrader's modes, made before any student can sign in (so none can make it first and own it); AccountError
    when one is there and is a link or someone else's."""
    for sub, mode in EXCHANGE_MODES.items():
        folder = course / sub if sub else course
        try:
            info = folder.lstat()
        except FileNotFoundError:
            folder.mkdir()
            os.chown(folder, instructor.pw_uid, instructor.pw_gid)
            folder.chmod(mode)
            continue
        again = "remove it: labs hub makes it again, the instructor's"
        if not stat.S_ISDIR(info.st_mode):
            raise AccountError(
                f"{folder} is {'a link' if stat.S_ISLNK(info.st_mode) else 'not a folder'}: {again}"
            )
        if info.st_uid != instructor.pw_uid:
            raise AccountError(
                f"{folder} belongs to {existing_name(info.st_uid)}, not to the instructor "
                f"{instructor.pw_name}, who could not release into it nor remove it: {again}"
            )


def existing_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def restore(saved: list[Saved]) -> None:
    """Put back the owners and modes :func:`lock_down` changed (the last change first)."""
    for entry in reversed(saved):
        try:
            os.chown(entry.path, entry.uid, entry.gid)
            entry.path.chmod(entry.mode)
        except FileNotFoundError:
            pass


def remove_class(root: Path, comment: str) -> list[str]:
    """Remove the class's accounts and its folder ``root`` (homes included, their images unmounted first);
    returns the accounts removed."""
    names = remove_accounts(comment)
    unmount_under(root)
    shutil.rmtree(root, ignore_errors=True)
    return names
