"""`labs lab`: the student notebooks released into their workspace, and the student's JupyterLab on it, on
127.0.0.1 with a token.

Students get nbgrader's assignment tools, not the instructor's panels (formgrader, "Create
Assignment", course list), and no JupyterLab news prompt.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from graders.nbgrader.course_root import CourseRoot

if TYPE_CHECKING:  # nbgrader loads only once a release is made
    from graders.nbgrader.release import WorkspaceSync

# What a student's JupyterLab leaves out: nbgrader's instructor panels and JupyterLab's news prompt.
STUDENT_DISABLED_PLUGINS = [
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:course-list",
    "@jupyterlab/apputils-extension:announcements",
]
# ... and the server side of those panels (their pages and APIs answer 404 for a student).
STUDENT_SERVER_EXTENSIONS = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
}


def release_workspace(
    chapters: list[Path], root: Path, workspace: Path, db: str | None = None
) -> tuple[Path, WorkspaceSync, list[str]]:
    """nbgrader's solution-free release of ``chapters`` in the course's nbgrader ``root`` (``db``: its gradebook),
    and its new files copied into the student's ``workspace`` (what is there is kept): `labs release`, and
    `labs lab` before it starts. Returns the release folder, what the copy did and the chapters whose gradebook
    entry was kept as graded; RuntimeError when nbgrader fails."""
    from graders.nbgrader.release import build_release, sync_workspace

    released, kept = build_release(chapters, CourseRoot(root.resolve(), db))
    return released, sync_workspace(released, workspace), kept


def student_page_config(root: Path) -> Path:
    """A Jupyter config folder whose labconfig disables the instructor's plugins (on JUPYTER_CONFIG_PATH)."""
    folder = CourseRoot(root).student_jupyter_config
    (folder / "labconfig").mkdir(parents=True, exist_ok=True)
    page = {"disabledExtensions": dict.fromkeys(STUDENT_DISABLED_PLUGINS, True)}
    (folder / "labconfig" / "page_config.json").write_text(json.dumps(page, indent=2), encoding="utf-8")
    return folder


def jupyterlab_command(workspace: Path, port: int, token: str, open_browser: bool) -> list[str]:
    """The JupyterLab server a student gets (root only where the process runs as root, as in containers)."""
    args = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={workspace.resolve()}",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.open_browser={open_browser}",
        f"--ServerApp.jpserver_extensions={STUDENT_SERVER_EXTENSIONS!r}",
    ]  # a Python literal, as traitlets reads it
    return args + (["--ServerApp.allow_root=True"] if os.getuid() == 0 else [])


def start_jupyterlab(
    workspace: Path, port: int, token: str, open_browser: bool, root: Path
) -> subprocess.Popen:
    """Start the student's JupyterLab (does not wait for it to listen: :func:`listening`)."""
    config_path = os.pathsep.join(
        filter(None, [str(student_page_config(root)), os.environ.get("JUPYTER_CONFIG_PATH")])
    )
    return subprocess.Popen(
        jupyterlab_command(workspace, port, token, open_browser),
        env=os.environ | {"JUPYTER_CONFIG_PATH": config_path},
    )


def forward_stop_signals(server: subprocess.Popen) -> None:
    """SIGTERM and SIGHUP to this process go to JupyterLab as well, which then shuts down (its kernels
    with it) and this process ends when it does; without this, stopping `labs lab` left it running."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda received, _frame: server.send_signal(received))


def listening(server: subprocess.Popen, port: int, timeout: float = 120) -> bool:
    """Wait until the server accepts connections on ``port`` (False if it exited or never did)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


def run_lab(
    workspace: Path,
    port: int,
    token: str,
    open_browser: bool,
    root: Path,
    on_up: Callable[[], None] = lambda: None,
) -> int:
    """The student's JupyterLab until it exits (Ctrl-C, SIGTERM and SIGHUP reach it too, and it shuts down
    cleanly); ``on_up`` is called once it listens. Returns its exit status."""
    server = start_jupyterlab(workspace, port, token, open_browser, root.resolve())
    forward_stop_signals(server)
    try:
        if listening(server, port):
            on_up()
        return server.wait()
    except KeyboardInterrupt:  # Ctrl-C reached the server too: let it shut down cleanly
        return server.wait()
