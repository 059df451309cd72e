"""Who is in the class, where it lives, how it signs in and what each student may use: :class:`HubPlan`.

A plan is everything `labs hub` decides before it writes a file: the people (from ``--class roster.csv``
or ``--student``), the folders, the ports, the authenticator (NativeAuthenticator, or ``dummy`` behind
``--demo``), each student's limits, the idle culler and HTTPS. :func:`plan_for` builds one from the command
line and says what is wrong with it.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from graders import paths

PROXY_NAME = "configurable-http-proxy"
PROXY_IN_BUILD = (
    paths.BUILD / "node" / "node_modules" / ".bin" / PROXY_NAME
)  # under the checkout (make system-deps)
CHECKOUT = Path(__file__).resolve().parents[2]
PROXY_HINT = (
    "install it: npm install --prefix build/node configurable-http-proxy@5.3.0 "
    "(make system-deps does), or put it on PATH"
)
DEFAULT_STUDENTS = ("ada", "ben")
USER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
GIB = 1 << 30
CULL_IDLE = 3600  # seconds a server may stay idle before the culler stops it (0: never)


@dataclass(frozen=True)
class Limits:
    """What all of one student's processes together may use (their server, kernels and terminals)."""

    memory_bytes: int = 2 * GIB
    cpus: float = 1.0  # a share of the machine's cores, enforced as a CPU quota
    processes: int = 256  # processes and threads together

    def describe(self) -> str:
        """``2.0 GiB, 1 CPU, 256 processes``."""
        return f"{self.memory_bytes / GIB:.1f} GiB, {self.cpus:g} CPU, {self.processes} processes"


DEFAULT_DISK = 2 * GIB


def default_disk(students: int, free_bytes: int) -> int:
    """Each student's home: 2 GiB, or an even share of half the free disk when that is less (at least 256 MiB),
    in whole MiB."""
    share = int(free_bytes * 0.5) // max(students, 1)
    return (min(DEFAULT_DISK, max(256 << 20, share)) >> 20) << 20


def default_limits(students: int, total_memory: int | None = None, cores: int | None = None) -> Limits:
    """Limits for a class of ``students`` on this machine: memory an even share of 80 % of the RAM (between 1
    and 4 GiB), :class:`Limits`' cores (or all of them when the machine has fewer) and processes."""
    total_memory = total_memory or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    cores = cores or os.cpu_count() or 1
    share = int(total_memory * 0.8) // max(students, 1)
    return Limits(memory_bytes=min(4 * GIB, max(GIB, share)), cpus=min(Limits.cpus, float(cores)))


@dataclass(frozen=True)
class HubPlan:
    """Where the class lives, who is in it and how they sign in; every path absolute.

    ``demo`` is the old class in a box: JupyterHub's ``dummy`` authenticator (any password) and every server as
    the hub's own unix user. Otherwise each person is a unix user of their own, signs in with NativeAuthenticator
    and runs under their limits.
    """

    root: Path
    port: int
    instructor: str
    students: tuple[str, ...]
    grading: Path
    proxy: Path
    hub_port: int = 0
    proxy_api_port: int = 0
    python_bin: Path = field(default_factory=lambda: Path(sys.executable).parent)
    demo: bool = False
    ip: str = "127.0.0.1"
    limits: Limits = Limits()
    cull_idle: int = CULL_IDLE
    https: tuple[Path, Path] | None = None  # certificate and key
    course: Path = CHECKOUT / paths.COURSE
    emails: tuple[tuple[str, str], ...] = ()
    file_bytes: int = GIB  # the largest file a student's process may write (RLIMIT_FSIZE)
    subdomain_host: str = ""  # each server on an origin of its own under this URL (JupyterHub's); "": none
    disk_bytes: int = (
        0  # each student's home a filesystem of this size (labs.hub.disks); 0: the host's, unlimited
    )

    @property
    def tmp_bytes(self) -> int:
        """Size of each server's private /tmp (and /var/tmp, /dev/shm): a quarter of a student's memory, at least
        256 MiB (a tmpfs: what it holds is memory, charged to the student's cgroup)."""
        return max(256 << 20, self.limits.memory_bytes // 4)

    @property
    def exchange_bytes(self) -> int:
        """Size of the exchange's filesystem, with homes of their own (``disk_bytes``): 32 MiB a person, at least
        256 MiB (submissions are notebooks of a few hundred KiB)."""
        return max(256 << 20, 32 * (1 << 20) * len(self.users))

    @property
    def disks(self) -> Path:
        """The images of the homes and the exchange (root's alone)."""
        return self.root / "disks"

    @property
    def users(self) -> tuple[str, ...]:
        return (self.instructor, *self.students)

    @property
    def exchange(self) -> Path:
        return self.root / "exchange"

    @property
    def config_file(self) -> Path:
        return self.root / "jupyterhub_config.py"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def passwords(self) -> Path:
        """``name,password`` of each account created with a one-time password (root only)."""
        return self.state / "passwords.csv"

    @property
    def url(self) -> str:
        scheme = "https" if self.https else "http"
        host = "127.0.0.1" if self.ip in ("", "0.0.0.0") else self.ip
        return f"{scheme}://{host}:{self.port}"

    @property
    def public_url(self) -> str:
        """Where people open the class: the subdomain host when servers have origins of their own, else ``url``."""
        return self.subdomain_host or self.url

    def server_url(self, user: str) -> str:
        """Where ``user``'s server is: ``http://<user>.localhost:PORT/user/<user>/`` with subdomains."""
        if not self.subdomain_host:
            return f"{self.url}/user/{user}/"
        scheme, host = self.subdomain_host.split("://", 1)
        return f"{scheme}://{user}.{host}/user/{user}/"

    @property
    def group_name(self) -> str:
        """The class's name for its cgroups and unix-account comments: one per hub root."""
        return class_name(self.root)

    def home(self, user: str) -> Path:
        return self.root / "home" / user

    def user_config(self, user: str) -> Path:
        return self.root / "config" / user

    def role(self, user: str) -> str:
        return "instructor" if user == self.instructor else "student"


SUBDOMAIN_HOST = re.compile(r"^https?://[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$")


def subdomain_host_for(
    value: str | None, port: int, ip: str = "127.0.0.1", https: bool = False, demo: bool = False
) -> str:
    """JupyterHub's ``subdomain_host`` for ``--subdomain-host VALUE``: each person's server on an origin of its own,
    ``<name>.<host>``. ``None`` (the default): ``http://localhost:PORT`` for a class served on 127.0.0.1 over HTTP
    (browsers resolve every ``*.localhost`` to this machine), none otherwise (another host needs a wildcard DNS
    record, and under HTTPS a wildcard certificate, that labs hub cannot know of) and none under ``--demo``.
    ``localhost``: ``http(s)://localhost:PORT``; ``off``: none; else a URL ``http(s)://host[:port]``, no path.
    ValueError for anything else."""
    if value is None:
        return f"http://localhost:{port}" if ip == "127.0.0.1" and not https and not demo else ""
    if value in ("off", ""):
        return ""
    if value == "localhost":
        return f"{'https' if https else 'http'}://localhost:{port}"
    url = value.strip().rstrip("/").lower()
    if not SUBDOMAIN_HOST.match(url):
        raise ValueError(
            f"--subdomain-host: {value!r} is not localhost, off, nor a URL http(s)://host[:port] "
            "(no path): each person's server is then at <name>.host"
        )
    return url


def class_name(root: Path) -> str:
    """``labs-hub-<root, as letters, digits and dashes>``: names the class's cgroups and marks its accounts."""
    return "labs-hub-" + re.sub(r"[^a-z0-9]+", "-", str(root.resolve()).lower()).strip("-")[-40:]


def find_proxy(explicit: Path | None = None) -> Path | None:
    """configurable-http-proxy: ``explicit``, the one under build/node (here or in the checkout), or the one on
    PATH (None if none)."""
    for candidate in (
        explicit,
        PROXY_IN_BUILD.resolve(),
        CHECKOUT / PROXY_IN_BUILD,
        shutil.which(PROXY_NAME),
    ):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate).resolve()
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_names(users: tuple[str, ...]) -> None:
    """ValueError unless the names are distinct unix user names."""
    if len(set(users)) != len(users) or not all(USER_NAME.match(u) for u in users):
        raise ValueError(
            f"user names must be distinct, lower-case letters, digits, - or _: {', '.join(users)}"
        )


def plan_for(
    port: int,
    root: Path,
    instructor: str,
    students: tuple[str, ...],
    grading: Path,
    proxy: Path | None,
    **options,
) -> HubPlan:
    """The class as the command line names it; ValueError says what is wrong with the names, the proxy or the
    certificate. ``options``: the other :class:`HubPlan` fields (``demo``, ``limits``, ``https``, ...)."""
    check_names((instructor, *students))
    found = find_proxy(proxy)
    if found is None:
        raise ValueError(f"{PROXY_NAME} not found: {PROXY_HINT}")
    https = options.get("https")
    if https is not None:
        missing = [str(p) for p in https if not Path(p).is_file()]
        if missing:
            raise ValueError(f"--https: no such file: {', '.join(missing)}")
        options["https"] = tuple(Path(p).resolve() for p in https)
    if "course" in options:
        options["course"] = Path(options["course"]).resolve()
    return HubPlan(
        root.resolve(),
        port,
        instructor,
        students,
        grading.resolve(),
        found,
        hub_port=free_port(),
        proxy_api_port=free_port(),
        **options,
    )
