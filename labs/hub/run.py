"""Set a class up and run its hub: :func:`prepare` writes every file (and, for a class, makes the accounts and
sets who may read what), :func:`serve` runs ``jupyterhub -f`` until Ctrl-C or SIGTERM and then stops it, which
stops every server and the proxy (``cleanup_servers``, ``cleanup_proxy``), removes the students' cgroups and puts
back the modes it changed. The accounts and homes stay (a class outlives one run of its hub):
:func:`teardown` (``labs hub --remove-class``) removes them. :func:`class_plan` makes the class's plan from
`labs hub`'s options, and :func:`run_class` does what the command asks with it, saying each step.
"""

from __future__ import annotations

import csv
import fcntl
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from labs.hub import disks, users
from labs.hub.config import hub_config_text, write_user_files
from labs.hub.limits import remove_class_groups
from labs.hub.plan import (
    CHECKOUT,
    CULL_IDLE,
    DEFAULT_STUDENTS,
    HubPlan,
    Limits,
    default_disk,
    default_limits,
    plan_for,
    subdomain_host_for,
)
from labs.hub.roster import read_roster
from labs.hub.walls import private_tmp_possible


class HubDidNotStart(RuntimeError):
    """JupyterHub exited or never answered; the message names its log."""


class ClassNotPossible(RuntimeError):
    """A class cannot be set up here (not root, the venv out of the students' reach, a name taken)."""


def read_passwords(path: Path) -> dict[str, str]:
    """``name -> one-time password`` from the passwords file (empty if none)."""
    if not path.is_file():
        return {}
    with path.open(newline="", encoding="utf-8") as handle:
        return {row[0]: row[1] for row in csv.reader(handle) if len(row) >= 2 and row[0] != "name"}


def write_passwords(plan: HubPlan) -> dict[str, str]:
    """A one-time password for each person who has none yet, in ``state/passwords.csv`` (name, password, email;
    root, 0600): the instructor hands them out; each person changes theirs at /hub/change-password."""
    known = read_passwords(plan.passwords)
    for name in plan.users:
        known.setdefault(name, secrets.token_urlsafe(12))
    emails = dict(plan.emails)
    plan.state.mkdir(parents=True, exist_ok=True)
    plan.passwords.touch(mode=0o600)
    plan.passwords.chmod(0o600)
    with plan.passwords.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "password", "email"])
        writer.writerows([name, password, emails.get(name, "")] for name, password in sorted(known.items()))
    return known


def needed_by_students(plan: HubPlan) -> list[Path]:
    """What every student's server must reach: the interpreter (its real path and prefix), the venv, the
    checkout (labutils) and the class's folder."""
    interpreter = Path(os.path.realpath(sys.executable))
    return [
        interpreter,
        Path(os.path.realpath(sys.base_prefix)) / "lib",
        plan.python_bin,
        CHECKOUT / "labutils",
        plan.root,
    ]


def check_class_possible(plan: HubPlan) -> None:
    """ClassNotPossible unless this runs as root and every student can reach Python, the venv and the class."""
    if os.geteuid() != 0:
        raise ClassNotPossible(
            "a class makes a unix user per person: run labs hub as root "
            "(or try it as it was, one unix user and any password, with --demo)"
        )
    refused = private_tmp_possible()
    if refused:
        raise ClassNotPossible(refused)
    refused = disks.disks_possible() if plan.disk_bytes else None
    if refused:
        raise ClassNotPossible(
            f"homes of their own size (--disk): {refused}; or --disk 0 (homes on the host's "
            "filesystem, without a limit)"
        )
    for path in needed_by_students(plan):
        blocked = users.unreachable(path / "x")
        if blocked is not None:
            raise ClassNotPossible(
                f"{blocked} is closed to other users (mode {blocked.stat().st_mode & 0o777:o}), and every student's "
                f"server needs {path}: let others pass through it (chmod o+x {blocked}: they can then open what "
                "they know the name of, not list it), or make the venv from a Python outside it"
            )


def prepare(plan: HubPlan) -> Path:
    """Create the class's folders and write jupyterhub_config.py (for a class: accounts, passwords, modes come
    with :func:`setup`); returns its path."""
    write_user_files(plan)
    plan.config_file.write_text(hub_config_text(plan), encoding="utf-8")
    return plan.config_file


def setup(plan: HubPlan) -> tuple[list[str], list[users.Saved]]:
    """For a class: the accounts (those created now), each student's home and the exchange on a filesystem of its
    own (``--disk``; mounted until :func:`serve` ends), their one-time passwords and who may read what."""
    check_class_possible(plan)
    try:
        created = users.create_accounts(plan)
        disks.mount_all(plan)
    except (users.AccountError, disks.DiskError) as err:
        raise ClassNotPossible(str(err)) from None
    write_passwords(plan)
    try:
        saved = users.lock_down(plan)
    except users.AccountError as err:
        disks.unmount_under(plan.root)
        raise ClassNotPossible(str(err)) from None
    return created, saved


def teardown(plan: HubPlan) -> list[str]:
    """Remove the class: its accounts, cgroups and folder (homes and exchange included); returns the accounts."""
    remove_class_groups(plan.group_name)
    return users.remove_class(plan.root, users.marker(plan))


def start(plan: HubPlan, log: Path) -> subprocess.Popen:
    """``jupyterhub -f CONFIG`` in its own session (a terminal's Ctrl-C reaches `labs hub`, which stops it)."""
    env = os.environ | {"PATH": f"{plan.python_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    log.touch(mode=0o600)
    with log.open("w") as out:
        return subprocess.Popen(
            [str(plan.python_bin / "jupyterhub"), "-f", str(plan.config_file)],
            cwd=plan.state,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_until_up(process: subprocess.Popen, url: str, timeout: float = 120) -> bool:
    """True once the hub answers through the proxy (``/hub/api``); False if it exited or never did."""
    import ssl

    context = ssl._create_unverified_context() if url.startswith("https") else None  # its own certificate
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/hub/api", timeout=5, context=context) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.3)
    return False


def stop(process: subprocess.Popen, timeout: float = 60) -> int:
    """SIGTERM the hub (it stops the servers and the proxy), SIGKILL its session if it does not exit."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return process.wait(timeout=30)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve(
    plan: HubPlan, on_up: Callable[[Path], None] = lambda _: None, saved: list[users.Saved] | None = None
) -> int:
    """Run the hub until Ctrl-C or SIGTERM; returns the hub's exit status. ``on_up`` hears its log once it
    answers. Afterwards the students' cgroups are removed, their homes and the exchange unmounted (their images
    stay) and the modes in ``saved`` put back."""
    log = plan.root / "jupyterhub.log"
    process = start(plan, log)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        try:
            if not wait_until_up(process, plan.url):
                stop(process)
                raise HubDidNotStart(f"JupyterHub did not start; its log: {log}")
            on_up(log)
            process.wait()
        except KeyboardInterrupt:
            pass
        return stop(process)
    finally:
        if not plan.demo:
            entries = [users.existing(name) for name in plan.users]
            users.stop_processes({entry.pw_uid for entry in entries if entry is not None})
            remove_class_groups(plan.group_name)
            disks.unmount_under(plan.root)
        users.restore(saved or [])


def class_plan(
    port: int,
    root: Path,
    instructor: str,
    grading: Path,
    proxy: Path | None,
    *,
    class_list: Path | None = None,
    students: list[str] | None = None,
    course: Path,
    ip: str = "127.0.0.1",
    https: tuple[Path, Path] | None = None,
    memory_gib: float | None = None,
    cpus: float | None = None,
    processes: int | None = None,
    disk_gib: float | None = None,
    cull_idle: int = CULL_IDLE,
    subdomain_host: str | None = None,
    demo: bool = False,
) -> HubPlan:
    """The class `labs hub`'s options name: the people of ``class_list`` but the instructor (else ``students``,
    else :data:`DEFAULT_STUDENTS`), each student's limits (an option, else a share of this machine), their disk
    (``disk_gib``: 0 none, at least 1/16 GiB; else a share of the free disk where homes of their own are
    possible), their origins. ValueError says what is wrong with an option."""
    people = read_roster(class_list) if class_list else []
    names = tuple(p.name for p in people if p.name != instructor) or tuple(students or DEFAULT_STUDENTS)
    share = default_limits(len(names))
    limits = Limits(
        int(memory_gib * (1 << 30)) if memory_gib else share.memory_bytes,
        cpus or share.cpus,
        processes or share.processes,
    )
    if disk_gib is None:
        free = shutil.disk_usage(
            next(p for p in (root.resolve(), *root.resolve().parents) if p.exists())
        ).free
        disk_bytes = 0 if demo or disks.disks_possible() else default_disk(len(names), free)
    elif disk_gib == 0 or disk_gib >= 1 / 16:
        disk_bytes = (int(disk_gib * (1 << 30)) >> 20) << 20
    else:
        raise ValueError(f"--disk {disk_gib:g}: 0 (no limit) or at least 1/16 GiB (64 MiB)")
    subdomains = subdomain_host_for(subdomain_host, port, ip, https is not None, demo)
    return plan_for(
        port,
        root,
        instructor,
        names,
        grading,
        proxy,
        demo=demo,
        ip=ip,
        https=https,
        limits=limits,
        cull_idle=cull_idle,
        course=course,
        subdomain_host=subdomains,
        disk_bytes=disk_bytes,
        emails=tuple((p.name, p.email) for p in people if p.email),
    )


def up_lines(plan: HubPlan, log: Path) -> list[str]:
    """What `labs hub` says once the hub answers: where, who signs in how, each student's limits."""
    lines = [f"JupyterHub: {plan.public_url}  (log: {log})"]
    if plan.subdomain_host:
        lines.append(f"  each server on its own origin: {plan.server_url('<name>')}")
    elif not plan.demo:
        lines.append(
            "  every server under the hub's origin (no --subdomain-host): open no link to another "
            "person's server (docs/hub.md)"
        )
    sign_in = (
        "test authenticator: any password" if plan.demo else "NativeAuthenticator, the one-time passwords"
    )
    lines.append(
        f"  instructor: {plan.instructor} (formgrader); students: {', '.join(plan.students)} "
        f"(Assignments tab); {sign_in}"
    )
    if not plan.demo:
        lines.append(
            f"  each student: {plan.limits.describe()}; idle servers stop after {plan.cull_idle or 'never'} s"
        )
        lines.append(
            f"  each student's home: {plan.disk_bytes >> 20} MiB of its own, the exchange "
            f"{plan.exchange_bytes >> 20} MiB (images in {plan.disks})"
            if plan.disk_bytes
            else "  homes and the exchange on the host's filesystem, without a size limit (--disk 0, "
            "or no loop devices here)"
        )
    lines.append(f"  exchange: {plan.exchange}; Ctrl-C stops the hub, every server and the proxy")
    return lines


def run_class(
    plan: HubPlan, say: Callable[[str], None], remove: bool = False, config_only: bool = False
) -> int:
    """`labs hub` with its plan: remove the class (``remove``), or write its config (and stop there with
    ``config_only``), set the class up (not for a demo) and serve it until stopped; each step said through
    ``say``. Returns the exit status; ClassNotPossible or HubDidNotStart say why not."""
    if remove:
        removed = teardown(plan)
        say(f"removed {plan.root} and the unix users {', '.join(removed) or '(none)'}")
        return 0
    if plan.demo and plan.ip != "127.0.0.1":
        raise ClassNotPossible("--demo takes any password: it listens on 127.0.0.1 only")
    with one_hub_per_root(plan.root):
        return _run(plan, say, config_only)


@contextmanager
def one_hub_per_root(root: Path) -> Iterator[None]:
    """Held while a `labs hub` works on ``root``: a second one (a restart while the first still stops) would
    set the class's folders up under the first one's feet, and the first's clean-up undo the second's modes."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / ".labs-hub.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClassNotPossible(
                f"another labs hub is running on {root} (wait until it has stopped, or stop it first)"
            ) from None
        yield
    finally:
        os.close(fd)


def _run(plan: HubPlan, say: Callable[[str], None], config_only: bool) -> int:
    written = prepare(plan)
    say(f"wrote {written}")
    saved: list[users.Saved] = []
    if not plan.demo and not config_only:
        created, saved = setup(plan)
        say(
            f"unix users: {', '.join(plan.users)} ({len(created)} created now); homes in {plan.root / 'home'} (0700)"
        )
        say(
            f"one-time passwords: {plan.passwords} (root only): hand them out; each person changes theirs at "
            "/hub/change-password"
        )
    if config_only:
        say(f"start it with: {plan.python_bin / 'jupyterhub'} -f {written}")
        return 0

    def up(log: Path) -> None:
        for line in up_lines(plan, log):
            say(line)

    return serve(plan, up, saved)
