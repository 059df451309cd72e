"""`labs hub`: a class in a box. JupyterHub on 127.0.0.1 with an instructor and students, nbgrader's exchange.

`labs hub` writes ``ROOT/jupyterhub_config.py`` (readable, self-contained: every path and port is spelled out)
and runs ``jupyterhub -f`` on it until Ctrl-C or SIGTERM, then stops the hub, which stops every single-user
server and the proxy (``cleanup_servers``, ``cleanup_proxy``). ``--config-only`` writes the file and exits.

What it sets up under ROOT (default ``build/hub``):

- ``exchange/``: nbgrader's exchange (``labs release --exchange``, ``labs collect``, ``labs feedback --release``).
- ``home/<user>/``: each user's home and JupyterLab root (SimpleLocalProcessSpawner: every server runs as the
  hub's own unix user, HOME set per user).
- ``config/<user>/``: the user's Jupyter config folder, put on ``JUPYTER_CONFIG_PATH`` by the spawner:
  ``nbgrader_config.py`` (course id, exchange, and for a student ``CourseDirectory.student_id``) and
  ``labconfig/page_config.json`` (the JupyterLab plugins the user does not get).
- ``state/``: the hub's database, cookie secret and pid files.

Why ``CourseDirectory.student_id``: nbgrader names a submission after ``nbgrader.utils.get_username()``, the unix
user (``$JUPYTERHUB_USER`` only when that user is ``jovyan``). Here every server runs as one unix user, so each
student's nbgrader config names them explicitly; submit, list and fetch-feedback all use it (docs/hub.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from graders.nbgrader_course import COURSE_ID
from labs.lab import STUDENT_DISABLED_PLUGINS, STUDENT_SERVER_EXTENSIONS

PROXY_NAME = "configurable-http-proxy"
PROXY_IN_BUILD = Path("build/node/node_modules/.bin") / PROXY_NAME  # under the checkout (make system-deps)
CHECKOUT = Path(__file__).resolve().parent.parent
PROXY_HINT = ("install it: npm install --prefix build/node configurable-http-proxy@5.3.0 "
              "(make system-deps does), or put it on PATH")
INSTRUCTOR_DISABLED_PLUGINS = ["@jupyterlab/apputils-extension:announcements"]
INSTRUCTOR_TORNADO = {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
DEFAULT_STUDENTS = ["ada", "ben"]
USER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@dataclass(frozen=True)
class HubPlan:
    """Where the class lives and who is in it; every path absolute."""

    root: Path
    port: int
    instructor: str
    students: tuple[str, ...]
    grading: Path
    proxy: Path
    hub_port: int = 0
    proxy_api_port: int = 0
    python_bin: Path = field(default_factory=lambda: Path(sys.executable).parent)

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
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def home(self, user: str) -> Path:
        return self.root / "home" / user

    def user_config(self, user: str) -> Path:
        return self.root / "config" / user

    def role(self, user: str) -> str:
        return "instructor" if user == self.instructor else "student"


def find_proxy(explicit: Path | None = None) -> Path | None:
    """configurable-http-proxy: ``explicit``, the one under build/node (here or in the checkout), or the one on
    PATH (None if none)."""
    for candidate in (explicit, PROXY_IN_BUILD.resolve(), CHECKOUT / PROXY_IN_BUILD, shutil.which(PROXY_NAME)):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate).resolve()
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nbgrader_config_text(plan: HubPlan, user: str) -> str:
    """The user's nbgrader_config.py: the course and exchange; a student's id; the instructor's course root."""
    lines = ["c = get_config()  # noqa  (written by labs hub)",
             f"c.CourseDirectory.course_id = {COURSE_ID!r}",
             f"c.Exchange.root = {str(plan.exchange)!r}"]
    if plan.role(user) == "student":
        lines.append(f"c.CourseDirectory.student_id = {user!r}  # one unix user for all: name the student")
    else:
        db_url = f"sqlite:///{plan.grading / 'gradebook.db'}"
        lines += [f"c.CourseDirectory.root = {str(plan.grading)!r}", f"c.CourseDirectory.db_url = {db_url!r}"]
    return "\n".join(lines) + "\n"


def page_config(plan: HubPlan, user: str) -> dict:
    """JupyterLab page config: students lose nbgrader's instructor panels, everyone the news prompt."""
    disabled = STUDENT_DISABLED_PLUGINS if plan.role(user) == "student" else INSTRUCTOR_DISABLED_PLUGINS
    return {"disabledExtensions": dict.fromkeys(disabled, True)}


def server_args(plan: HubPlan, user: str) -> list[str]:
    """Arguments of the user's jupyterhub-singleuser: students get no formgrader or course list; the
    instructor's pages may be framed by their own JupyterLab, and their root holds the course (formgrader)."""
    args = []
    if plan.role(user) == "student":
        args.append(f"--ServerApp.jpserver_extensions={STUDENT_SERVER_EXTENSIONS!r}")
    else:  # formgrader is a page in an iframe (jupyterhub-singleuser forbids framing unless told otherwise),
        # and works only on a course folder inside the server's root
        args += [f"--ServerApp.tornado_settings={INSTRUCTOR_TORNADO!r}",
                 f"--ServerApp.root_dir={os.path.commonpath([plan.home(user), plan.grading])}"]
    if os.getuid() == 0:  # SimpleLocalProcessSpawner runs servers as the hub's user
        args.append("--ServerApp.allow_root=True")
    return args


def write_user_files(plan: HubPlan) -> None:
    """Each user's home and Jupyter config folder, and the exchange (world-writable, as nbgrader makes it)."""
    plan.exchange.mkdir(parents=True, exist_ok=True)
    plan.exchange.chmod(0o777)
    plan.state.mkdir(parents=True, exist_ok=True)
    plan.grading.mkdir(parents=True, exist_ok=True)
    for user in plan.users:
        plan.home(user).mkdir(parents=True, exist_ok=True)
        folder = plan.user_config(user)
        (folder / "labconfig").mkdir(parents=True, exist_ok=True)
        (folder / "nbgrader_config.py").write_text(nbgrader_config_text(plan, user), encoding="utf-8")
        (folder / "labconfig" / "page_config.json").write_text(json.dumps(page_config(plan, user), indent=2),
                                                               encoding="utf-8")


HUB_CONFIG = '''\
"""JupyterHub for PyTorch Labs, written by `labs hub` (labs/hub.py): run `labs hub` again rather than edit.

Test authenticator (any password) and SimpleLocalProcessSpawner (every server as this unix user, HOME per user):
for a class on one machine, on 127.0.0.1 only. Stopping the hub stops every server and the proxy.
"""

c = get_config()  # noqa: F821

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {proxy_pid!r}
c.JupyterHub.db_url = {db_url!r}
c.JupyterHub.cookie_secret_file = {cookie_secret!r}
c.JupyterHub.pid_file = {hub_pid!r}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = set({users!r})
c.Authenticator.admin_users = {{{instructor!r}}}

c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {home_template!r}
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 300
c.Spawner.http_timeout = 300

# Per user: Jupyter config folder (nbgrader_config.py, labconfig) and server arguments.
USERS = {per_user}


def pre_spawn_hook(spawner):
    """Give the user their own Jupyter config folder and server arguments (students: no formgrader)."""
    user = USERS[spawner.user.name]
    spawner.environment = dict(spawner.environment, JUPYTER_CONFIG_PATH=user["config"])
    spawner.args = list(user["args"])


c.Spawner.pre_spawn_hook = pre_spawn_hook
'''


def hub_config_text(plan: HubPlan) -> str:
    """The text of jupyterhub_config.py for ``plan``."""
    per_user = {u: {"role": plan.role(u), "config": str(plan.user_config(u)), "args": server_args(plan, u)}
                for u in plan.users}
    return HUB_CONFIG.format(
        port=plan.port, hub_port=plan.hub_port, proxy_api_port=plan.proxy_api_port, proxy=str(plan.proxy),
        proxy_pid=str(plan.state / "proxy.pid"), db_url=f"sqlite:///{plan.state / 'jupyterhub.sqlite'}",
        cookie_secret=str(plan.state / "cookie_secret"), hub_pid=str(plan.state / "jupyterhub.pid"),
        users=sorted(plan.users), instructor=plan.instructor,
        home_template=str(plan.root / "home") + "/{username}",
        singleuser=str(plan.python_bin / "jupyterhub-singleuser"),
        per_user=json.dumps(per_user, indent=4, sort_keys=True))


def prepare(plan: HubPlan) -> Path:
    """Create the class's folders and write jupyterhub_config.py; returns its path."""
    write_user_files(plan)
    plan.config_file.write_text(hub_config_text(plan), encoding="utf-8")
    return plan.config_file


def start(plan: HubPlan, log: Path) -> subprocess.Popen:
    """``jupyterhub -f CONFIG`` in its own session (a terminal's Ctrl-C reaches `labs hub`, which stops it)."""
    env = os.environ | {"PATH": f"{plan.python_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    with log.open("w") as out:
        return subprocess.Popen([str(plan.python_bin / "jupyterhub"), "-f", str(plan.config_file)],
                                cwd=plan.state, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def wait_until_up(process: subprocess.Popen, url: str, timeout: float = 120) -> bool:
    """True once the hub answers through the proxy (``/hub/api``); False if it exited or never did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/hub/api", timeout=5) as response:
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


class HubDidNotStart(RuntimeError):
    """JupyterHub exited or never answered; the message names its log."""


def serve(plan: HubPlan, on_up: Callable[[Path], None] = lambda _: None) -> int:
    """Run the hub until Ctrl-C or SIGTERM; returns the hub's exit status. ``on_up`` hears its log once it answers."""
    log = plan.root / "jupyterhub.log"
    process = start(plan, log)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if not wait_until_up(process, plan.url):
            stop(process)
            raise HubDidNotStart(f"JupyterHub did not start; its log: {log}")
        on_up(log)
        process.wait()
    except KeyboardInterrupt:
        pass
    return stop(process)


def plan_for(port: int, root: Path, instructor: str, students: tuple[str, ...], grading: Path,
             proxy: Path | None) -> HubPlan:
    """The class as the command line names it; ValueError says what is wrong with the names or the proxy."""
    users = (instructor, *students)
    if len(set(users)) != len(users) or not all(USER_NAME.match(u) for u in users):
        raise ValueError(f"user names must be distinct, lower-case letters, digits, - or _: {', '.join(users)}")
    found = find_proxy(proxy)
    if found is None:
        raise ValueError(f"{PROXY_NAME} not found: {PROXY_HINT}")
    return HubPlan(root.resolve(), port, instructor, students, grading.resolve(), found,
                   hub_port=free_port(), proxy_api_port=free_port())
