"""The files `labs hub` writes: ``jupyterhub_config.py`` and each user's Jupyter config folder.

``jupyterhub_config.py`` is readable and self-contained (every path, port and limit spelled out); run it by hand
with ``jupyterhub -f``. Each user's ``config/<user>/`` is put on their ``JUPYTER_CONFIG_PATH`` by the spawner:
``nbgrader_config.py`` (course id and exchange; the instructor's course root and gradebook) and
``labconfig/page_config.json`` (the JupyterLab plugins the user does not get) and ``kernels/python3/kernel.json``
(the class's kernel, :mod:`labs.hub.kernel`; the folder is on their ``JUPYTER_PATH`` too).

In a class each server runs as its person's unix user, so nbgrader names a submission after the unix user
(``nbgrader.utils.get_username()``) and `labs collect` checks the owner. Under ``--demo`` every server runs as the
hub's own unix user: each student's nbgrader config then names them (``CourseDirectory.student_id``), and the
owner check cannot hold.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from graders.nbgrader.course_root import CourseRoot, config_text, student_config_values
from labs.hub.kernel import kernel_spec
from labs.hub.plan import CHECKOUT, HubPlan
from labs.hub.walls import under_private
from labs.lab import STUDENT_DISABLED_PLUGINS, STUDENT_SERVER_EXTENSIONS

INSTRUCTOR_DISABLED_PLUGINS = ["@jupyterlab/apputils-extension:announcements"]
INSTRUCTOR_TORNADO = {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
# A student's pages may be framed by nothing (a page another student serves under the hub's origin included).
STUDENT_TORNADO = {
    "headers": {"Content-Security-Policy": "frame-ancestors 'none'", "X-Frame-Options": "DENY"}
}
# Kernels talk to their server over unix sockets in the user's runtime folder (in their 0700 home), not TCP ports
# any local user could connect to.
KERNEL_TRANSPORT = "--KernelManager.transport=ipc"
# What a server inherits from the hub's environment: LocalProcessSpawner's own list (JupyterHub 6), and torch's
# threads.
LOCKOUT_FAILURES, LOCKOUT_SECONDS = (
    5,
    300,
)  # wrong passwords in a row; how long the name is refused after them
KEEP_ENV = [
    "CONDA_DEFAULT_ENV",
    "CONDA_ROOT",
    "JUPYTERHUB_SINGLEUSER_APP",
    "LANG",
    "LC_ALL",
    "LD_LIBRARY_PATH",
    "PATH",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
]


def nbgrader_config_text(plan: HubPlan, user: str) -> str:
    """The user's nbgrader_config.py: the course and exchange; the instructor's course root; under ``--demo`` a
    student's id (one unix user for all)."""
    if plan.role(user) == "instructor":
        return CourseRoot(plan.grading).config_text(exchange=plan.exchange, header="written by labs hub")
    # --demo: one unix user for all, so the config names the student
    return config_text(
        student_config_values(plan.exchange, user if plan.demo else None), "written by labs hub"
    )


def page_config(plan: HubPlan, user: str) -> dict:
    """JupyterLab page config: students lose nbgrader's instructor panels, everyone the news prompt."""
    disabled = STUDENT_DISABLED_PLUGINS if plan.role(user) == "student" else INSTRUCTOR_DISABLED_PLUGINS
    return {"disabledExtensions": dict.fromkeys(disabled, True)}


def server_args(plan: HubPlan, user: str) -> list[str]:
    """Arguments of the user's jupyterhub-singleuser: students get no formgrader or course list; the
    instructor's pages may be framed by their own JupyterLab, and their root holds the course (formgrader)."""
    args = [] if plan.demo else [KERNEL_TRANSPORT]  # --demo: no private runtime folder for the sockets
    if plan.role(user) == "student":
        args += [
            f"--ServerApp.jpserver_extensions={STUDENT_SERVER_EXTENSIONS!r}",
            f"--ServerApp.tornado_settings={STUDENT_TORNADO!r}",
        ]
    else:  # formgrader is a page in an iframe (jupyterhub-singleuser forbids framing unless told otherwise),
        # and works only on a course folder inside the server's root
        args += [
            f"--ServerApp.tornado_settings={INSTRUCTOR_TORNADO!r}",
            f"--ServerApp.root_dir={os.path.commonpath([plan.home(user), plan.grading])}",
        ]
    if plan.demo and os.getuid() == 0:  # --demo: SimpleLocalProcessSpawner runs servers as the hub's user
        args.append("--ServerApp.allow_root=True")
    return args


def write_user_files(plan: HubPlan) -> None:
    """Each user's Jupyter config folder, the exchange and the state folder (homes: labs.hub.users in a
    class, made here under ``--demo``)."""
    plan.exchange.mkdir(parents=True, exist_ok=True)
    plan.exchange.chmod(0o1777 if not plan.demo else 0o777)
    plan.state.mkdir(parents=True, exist_ok=True)
    plan.grading.mkdir(parents=True, exist_ok=True)
    for user in plan.users:
        if plan.demo:
            plan.home(user).mkdir(parents=True, exist_ok=True)
        folder = plan.user_config(user)
        (folder / "labconfig").mkdir(parents=True, exist_ok=True)
        (folder / "nbgrader_config.py").write_text(nbgrader_config_text(plan, user), encoding="utf-8")
        (folder / "labconfig" / "page_config.json").write_text(
            json.dumps(page_config(plan, user), indent=2), encoding="utf-8"
        )
        spec = folder / "kernels" / "python3"  # found first on JUPYTER_PATH: replaces ipykernel's own
        spec.mkdir(parents=True, exist_ok=True)
        (spec / "kernel.json").write_text(
            json.dumps(kernel_spec(str(plan.python_bin / "python")), indent=1), encoding="utf-8"
        )


COMMON = '''\
"""JupyterHub for PyTorch Labs, written by `labs hub` (labs/hub/config.py): run `labs hub` again rather than edit.

{summary}
Stopping the hub stops every server and the proxy.
"""

c = get_config()  # noqa: F821

c.JupyterHub.ip = {ip!r}
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
c.Authenticator.allowed_users = set({users!r})
# The instructor runs the class (the admin page, students' servers listed, started and stopped) but is no hub
# admin: the admin role holds access:servers and tokens (an API token for a student's server, then its
# terminals), and admin:users lets NativeAuthenticator's admin page set a student's password (then sign in as
# them). Nobody is an admin; the class list alone makes accounts (allowed_users), so no sign-up needs approving.
c.JupyterHub.load_roles = [{{
    "name": "instructor",
    "description": "runs the class; never enters a student's server",
    "scopes": ["self", "admin-ui", "list:users", "read:users", "admin:servers", "read:hub", "list:services",
               "read:services"],
    "users": [{instructor!r}],
}}]
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 300
c.Spawner.http_timeout = 300
c.Spawner.env_keep = {env_keep!r}
# The hub's pages may be framed by nothing (a page a student serves under the hub's origin included).
c.JupyterHub.tornado_settings = {{"headers": {{"Content-Security-Policy": "frame-ancestors 'none'",
                                             "X-Frame-Options": "DENY"}}}}
'''

SUBDOMAINS = """
# Each person's server on an origin of its own, {example} (the hub's at {host}): a page served
# from one server cannot script the hub, nor another's server, with its visitor's cookies (the browser's same-origin
# policy). Every <name>.{hostname} must reach this machine (*.localhost does in browsers; elsewhere a wildcard DNS
# record, and for HTTPS a wildcard certificate).
c.JupyterHub.subdomain_host = {host!r}
"""

SHARED_ORIGIN = """
# Every server under the hub's own origin (/user/<name>/): no --subdomain-host (docs/hub.md, not guaranteed).
"""

DEMO = """
# --demo: any password (JupyterHub's test authenticator), every server as this unix user with HOME per user.
c.JupyterHub.authenticator_class = "dummy"
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {home_template!r}
"""

CLASS = """
# A class: NativeAuthenticator (accounts from the class list, each with a one-time password; new sign-ups wait for
# the instructor's approval at /hub/authorize), each server as its person's unix user (created by labs hub),
# each student's processes together in a cgroup with these limits.
c.JupyterHub.authenticator_class = "labs.hub.auth.ClassAuthenticator"
c.ClassAuthenticator.accounts_file = {accounts!r}
c.NativeAuthenticator.open_signup = False
c.NativeAuthenticator.minimum_password_length = 10
c.NativeAuthenticator.check_common_password = True
# After {failures} wrong passwords in a row a name signs in again only {lockout} s after the last one.
c.NativeAuthenticator.allowed_failed_logins = {failures}
c.NativeAuthenticator.seconds_before_next_try = {lockout}
c.JupyterHub.spawner_class = "labs.hub.spawner.ClassSpawner"
c.ClassSpawner.class_name = {class_name!r}
c.ClassSpawner.memory_bytes = {memory}
c.ClassSpawner.cpus = {cpus}
c.ClassSpawner.processes = {processes}
c.ClassSpawner.unlimited_users = {{{instructor!r}}}
# Every server: a private /tmp, /var/tmp and /dev/shm of this size (tmpfs: memory); a student's files at most
# file_bytes; the folders under /tmp that servers need, bound into their private /tmp.
c.ClassSpawner.tmp_bytes = {tmp_bytes}
c.ClassSpawner.file_bytes = {file_bytes}
c.ClassSpawner.keep_paths = {keep!r}
# No server reads configuration from its user's home (~/.jupyter, ~/.local): only labs hub's.
c.Spawner.disable_user_config = True
"""

CULLER = """
# Idle culling: a server without activity for {timeout} s is stopped (its kernels with it); the servers report
# activity every {activity} s, the hub reads the proxy's every {activity} s.
c.JupyterHub.last_activity_interval = {activity}
c.Spawner.environment = {{"JUPYTERHUB_ACTIVITY_INTERVAL": "{activity}"}}
c.JupyterHub.services = [{{
    "name": "idle-culler",
    "command": [{python!r}, "-m", "jupyterhub_idle_culler", "--timeout={timeout}", "--cull-every={every}"],
}}]
c.JupyterHub.load_roles.append({{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}})
"""

HTTPS = """
# HTTPS: the proxy serves this certificate and key.
c.JupyterHub.ssl_cert = {cert!r}
c.JupyterHub.ssl_key = {key!r}
"""

PER_USER = '''
# Per user: Jupyter config folder (nbgrader_config.py, labconfig) and server arguments.
USERS = {per_user}


def pre_spawn_hook(spawner):
    """Give the user their own Jupyter config folder (also on JUPYTER_PATH: the class's python3 kernel) and server
    arguments (students: no formgrader)."""
    user = USERS[spawner.user.name]
    spawner.environment = dict(spawner.environment, JUPYTER_CONFIG_PATH=user["config"], JUPYTER_PATH=user["config"])
    spawner.args = list(user["args"])


c.Spawner.pre_spawn_hook = pre_spawn_hook
'''


def kept_under_private_tmp(plan: HubPlan) -> list[str]:
    """The class's folders (and Python's) that lie under /tmp, /var/tmp or /dev/shm: each server's private
    ones would hide them, so they are bound back in."""
    wanted = [
        plan.root,
        plan.course,
        plan.grading,
        plan.python_bin.parent,
        Path(os.path.realpath(sys.base_prefix)),
        CHECKOUT,
    ]
    found = sorted({str(p) for p in wanted if under_private(str(p))})
    return [p for p in found if not any(p.startswith(q + "/") for q in found)]  # the outermost of each


def activity_interval(cull_idle: int) -> int:
    """How often servers report activity: a third of the idle timeout, at most JupyterHub's 300 s."""
    return max(5, min(300, cull_idle // 3))


def hub_config_text(plan: HubPlan) -> str:
    """The text of jupyterhub_config.py for ``plan``."""
    per_user = {
        u: {"role": plan.role(u), "config": str(plan.user_config(u)), "args": server_args(plan, u)}
        for u in plan.users
    }
    summary = (
        "--demo: test authenticator (any password), every server as this unix user; on 127.0.0.1 only."
        if plan.demo
        else "A class: one unix user per person, NativeAuthenticator, per-student limits, idle culling."
    )
    text = COMMON.format(
        summary=summary,
        ip=plan.ip,
        port=plan.port,
        hub_port=plan.hub_port,
        proxy_api_port=plan.proxy_api_port,
        proxy=str(plan.proxy),
        proxy_pid=str(plan.state / "proxy.pid"),
        db_url=f"sqlite:///{plan.state / 'jupyterhub.sqlite'}",
        cookie_secret=str(plan.state / "cookie_secret"),
        hub_pid=str(plan.state / "jupyterhub.pid"),
        users=sorted(plan.users),
        instructor=plan.instructor,
        singleuser=str(plan.python_bin / "jupyterhub-singleuser"),
        env_keep=KEEP_ENV,
    )
    if plan.subdomain_host:
        scheme, host = plan.subdomain_host.split("://", 1)
        text += SUBDOMAINS.format(
            host=plan.subdomain_host,
            example=f"{scheme}://<name>.{host}/user/<name>/",
            hostname=host.split(":")[0],
        )
    else:
        text += SHARED_ORIGIN
    if plan.demo:
        text += DEMO.format(home_template=str(plan.root / "home") + "/{username}")
    else:
        text += CLASS.format(
            accounts=str(plan.passwords),
            class_name=plan.group_name,
            memory=plan.limits.memory_bytes,
            cpus=plan.limits.cpus,
            processes=plan.limits.processes,
            instructor=plan.instructor,
            failures=LOCKOUT_FAILURES,
            lockout=LOCKOUT_SECONDS,
            tmp_bytes=plan.tmp_bytes,
            file_bytes=plan.file_bytes,
            keep=kept_under_private_tmp(plan),
        )
    if plan.cull_idle > 0:
        text += CULLER.format(
            timeout=plan.cull_idle,
            activity=activity_interval(plan.cull_idle),
            every=max(5, min(300, plan.cull_idle // 4)),
            python=str(plan.python_bin / "python"),
        )
    if plan.https:
        text += HTTPS.format(cert=str(plan.https[0]), key=str(plan.https[1]))
    return text + PER_USER.format(per_user=json.dumps(per_user, indent=4, sort_keys=True))
