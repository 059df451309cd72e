"""Run a class with `labs hub` and drive it like its users: sign in, the Assignments tab (fetch, submit, fetch
feedback), a notebook.

:func:`hub_server` starts a real class (as root, as CI runs: a unix user per person from a class list, their
one-time passwords, per-student limits) in a folder of its own under /tmp that every user can pass through
(pytest's tmp_path is root's alone), and removes all of it afterwards, also when the test fails: the hub, every
process of the class's users, their accounts and groups, their cgroups and the folder. :func:`run_as` runs a
command as one of them (the instructor's `labs` commands, in their terminal).

Each user has a browser context of their own (their own hub cookie). Notebooks are driven with
tests/browser/jupyterlab.py's LabNotebook through :class:`HubServer`, which reads what the server saved from the
user's home on disk (the hub runs on this machine) instead of through a token-authenticated REST API.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import secrets
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import nbformat
import psutil

from labs.hub import PROXY_HINT, find_proxy
from labs.hub.limits import class_folders, remove_class_groups
from labs.hub.plan import class_name
from labs.hub.users import class_accounts, marker, remove_class
from tests.browser import chromium
from tests.browser.jupyterlab import SETTINGS, free_port
from tests.conftest import BIN, ROOT, labs_env
from tests.requires import unavailable

LAB_SHELL = "#jp-main-dock-panel"
DISK_GIB = (
    0.25  # each student's home in a test class, unless its options say otherwise (labs hub's default: 2)
)
RELEASED, FETCHED, SUBMITTED = (
    "#released_assignments_list",
    "#fetched_assignments_list",
    "#submitted_assignments_list",
)


@dataclass
class RunningHub:
    """A running `labs hub` class: where it listens, its folders, its people's passwords, its process."""

    port: int
    root: Path
    process: subprocess.Popen
    log: Path
    scratch: Path = Path("/nonexistent")
    passwords: dict[str, str] = field(default_factory=dict)
    instructor: str = "instructor"
    certificate: Path | None = None  # its --https certificate (self-signed for 127.0.0.1), None: plain HTTP
    subdomains: bool = (
        False  # each server on its own origin, <name>.localhost (labs hub's default on 127.0.0.1)
    )

    @property
    def base(self) -> str:
        """Where the hub listens (and, without subdomains, every server under /user/<name>/)."""
        return f"{'https' if self.certificate else 'http'}://127.0.0.1:{self.port}"

    @property
    def public(self) -> str:
        """Where a browser opens the hub: ``http://localhost:PORT`` with subdomains, else ``base``."""
        return f"http://localhost:{self.port}" if self.subdomains else self.base

    def origin(self, user: str) -> str:
        """The origin of ``user``'s server: ``http://<user>.localhost:PORT`` with subdomains, else ``base``."""
        return f"http://{user}.localhost:{self.port}" if self.subdomains else self.base

    @property
    def grading(self) -> Path:
        """The course's nbgrader root (release, gradebook, submissions), in the instructor's home: formgrader's root is
        their server's."""
        return self.home(self.instructor) / "grading"

    @property
    def course(self) -> Path:
        return self.scratch / "course"

    @property
    def exchange(self) -> Path:
        return self.root / "exchange"

    @property
    def class_name(self) -> str:
        return class_name(self.root)

    def home(self, user: str) -> Path:
        return self.root / "home" / user

    def processes(self) -> list[psutil.Process]:
        """`labs hub` and everything it started (hub, proxy, single-user servers, kernels)."""
        try:
            top = psutil.Process(self.process.pid)
            return [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def log_tail(self, lines: int = 40) -> str:
        files = [self.log, self.root / "jupyterhub.log"]
        return "\n".join(
            "\n".join(f.read_text(errors="replace").splitlines()[-lines:]) for f in files if f.exists()
        )


def _public_scratch() -> Path:
    """A fresh folder under /tmp that every user may pass through (0711) but not list."""
    folder = Path(tempfile.mkdtemp(prefix="labs-hub-test-", dir="/tmp"))
    folder.chmod(0o711)
    return folder


def class_unavailable(browser: bool = False) -> str | None:
    """Why a class cannot be run here (Chromium missing, when ``browser``; no configurable-http-proxy; not root),
    or None."""
    if browser and (why := chromium.missing()):
        return why
    if not find_proxy():
        return f"configurable-http-proxy not found: {PROXY_HINT}"
    if os.geteuid() != 0:
        return "a class makes a unix user per person: the hub tests run as root (as CI does)"
    return None


def need_a_class(browser: bool = False) -> None:
    """Skip, saying why, where a class cannot run; fail instead under --require=hub (.ci/run's make system,
    where every piece is installed and a skip would hide one that is not)."""
    why = class_unavailable(browser)
    if why:
        unavailable("hub", why)


OPENED = Path(
    "/tmp/labs-hub-test-opened.json"
)  # folders opened (o+x) for classes, with how many classes use them


@contextmanager
def reachable(paths: list[Path]) -> Iterator[None]:
    """Let other users pass through (o+x) every folder above ``paths`` that is closed (pyenv's Python lives under
    /root here), for as long as any class needs it; then put the modes back. Counted across processes (the load
    stage's class may run beside the browser stage's), under a lock."""
    import fcntl

    def change(step: int) -> None:
        with open(str(OPENED) + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = json.loads(OPENED.read_text()) if OPENED.exists() else {"classes": 0, "folders": {}}
            state["classes"] += step
            if step > 0:
                for path in paths:
                    for folder in reversed((path / "x").parents):
                        mode = folder.stat().st_mode & 0o7777
                        if not mode & 0o001 and str(folder) not in state["folders"]:
                            state["folders"][str(folder)] = mode
                            folder.chmod(mode | 0o001)
            elif state["classes"] <= 0:
                for folder, mode in state["folders"].items():
                    Path(folder).chmod(mode)
                state = {"classes": 0, "folders": {}}
            OPENED.write_text(json.dumps(state))

    change(+1)
    try:
        yield
    finally:
        change(-1)


@contextmanager
def hub_server(
    scratch: Path,
    grading: Path | None = None,
    startup_timeout: float = 180,
    people: tuple[str, ...] = ("instructor", "ada", "ben"),
    chapters: tuple[str, ...] = ("01_autograd",),
    options: tuple[str, ...] = (),
    https: bool = False,
    subdomains: bool = False,
) -> Iterator[RunningHub]:
    """``labs hub --class ROSTER`` (first person: the instructor) on a free port until the block ends, then
    SIGTERM, and the class removed whatever happened. Its folders are in a public scratch folder (``hub.scratch``):
    ``hub/`` (``--root``; ``--grading``, the course's nbgrader root, is ``grading/`` in the instructor's home) and
    ``course/`` (a copy of ``chapters``); ``scratch`` (the test's tmp_path) keeps `labs hub`'s output.
    ``grading`` is ignored (the class's is ``hub.grading``). ``https``: ``--https`` with a self-signed certificate
    for 127.0.0.1 made here (openssl). ``subdomains``: labs hub's default on 127.0.0.1, each server at
    ``<name>.localhost`` (which only a browser resolves); otherwise ``--subdomain-host off``, every server under
    ``hub.base`` (as :class:`labs.hub.client.HubSession` and :class:`HubUser` reach them). Each student's home is
    a filesystem of :data:`DISK_GIB` unless ``options`` hold a ``--disk``."""
    public = _public_scratch()
    port, root, log = free_port(), public / "hub", scratch / "labs_hub.log"
    for chapter in chapters:
        shutil.copytree(ROOT / "course" / chapter, public / "course" / chapter)
    roster = public / "roster.csv"
    roster.write_text("name,email\n" + "".join(f"{p},{p}@example.org\n" for p in people[1:]))
    command = [
        str(BIN / "labs"),
        "hub",
        "--port",
        str(port),
        "--root",
        str(root),
        "--class",
        str(roster),
        "--instructor",
        people[0],
        "--grading",
        str(root / "home" / people[0] / "grading"),
        "--course",
        str(public / "course"),
        *(() if subdomains else ("--subdomain-host", "off")),
        *(() if "--disk" in options else ("--disk", str(DISK_GIB))),
        *options,
    ]
    certificate = self_signed(public / "tls") if https else None
    if certificate:
        command += ["--https", str(certificate), str(certificate.with_suffix(".key"))]
    hub = None
    with reachable(
        [
            Path(os.path.realpath(sys.executable)),
            Path(os.path.realpath(sys.base_prefix)) / "lib",
            BIN,
            ROOT / "labutils",
            public,
        ]
    ):
        try:
            with log.open("w") as out:
                process = subprocess.Popen(
                    command, cwd=public, env=labs_env(), stdout=out, stderr=subprocess.STDOUT
                )
            hub = RunningHub(
                port,
                root,
                process,
                log,
                public,
                instructor=people[0],
                certificate=certificate,
                subdomains=subdomains,
            )
            _wait_until_up(hub, startup_timeout)
            with (root / "state" / "passwords.csv").open() as handle:
                hub.passwords = {row[0]: row[1] for row in csv.reader(handle) if row[0] != "name"}
            yield hub
        finally:
            try:
                if hub is not None:
                    stop_hub(hub)
                remove_whole_class(root)
            finally:
                shutil.rmtree(public, ignore_errors=True)


def self_signed(folder: Path) -> Path:
    """A certificate for 127.0.0.1 (``folder/hub.pem``) and its key (``hub.key``), valid a day, root's only."""
    folder.mkdir(mode=0o700)
    certificate = folder / "hub.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(certificate.with_suffix(".key")),
            "-out",
            str(certificate),
        ],
        check=True,
        capture_output=True,
    )
    return certificate


def remove_whole_class(root: Path) -> None:
    """The class's accounts (their processes first), cgroups and folder; AssertionError if any is left."""
    name = class_name(root)
    remove_class_groups(name)
    remove_class(root, marker(root))
    left = class_accounts(marker(root))
    groups = [str(f) for f in class_folders(name) if f.exists()]
    assert not left and not groups, f"left behind: accounts {left}, cgroups {groups}"


def run_as(
    user: str,
    command: list[str],
    cwd: Path | None = None,
    timeout: float = 600,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """``command`` as the unix user ``user`` (their uid, group and HOME; caches in their home), output captured."""
    entry = pwd.getpwnam(user)
    home = Path(entry.pw_dir)
    base = labs_env()
    base.update(
        {
            "HOME": str(home),
            "USER": user,
            "LOGNAME": user,
            "TORCHINDUCTOR_CACHE_DIR": str(home / ".cache" / "inductor"),
            "MPLCONFIGDIR": str(home / ".cache" / "matplotlib"),
            "IPYTHONDIR": str(home / ".ipython"),
            "JUPYTER_RUNTIME_DIR": str(home / ".local" / "share" / "jupyter" / "runtime"),
            "TRITON_CACHE_DIR": str(home / ".cache" / "triton"),
        }
    )
    base.update(env or {})
    return subprocess.run(
        command,
        cwd=cwd or home,
        env=base,
        capture_output=True,
        text=True,
        timeout=timeout,
        user=entry.pw_uid,
        group=entry.pw_gid,
        extra_groups=[],
    )


def _wait_until_up(hub: RunningHub, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if hub.process.poll() is not None:
            raise RuntimeError(f"labs hub exited with {hub.process.returncode}:\n{hub.log_tail()}")
        try:
            context = ssl._create_unverified_context() if hub.certificate else None  # self-signed
            with urllib.request.urlopen(f"{hub.base}/hub/api", timeout=5, context=context):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    raise TimeoutError(f"labs hub did not answer within {timeout:.0f} s:\n{hub.log_tail()}")


def stop_hub(hub: RunningHub, timeout: float = 90) -> list[str]:
    """SIGTERM `labs hub` and wait; returns what was still alive then (killed, so nothing outlives the test)."""
    tree = hub.processes()
    if hub.process.poll() is None:
        hub.process.terminate()
    _, alive = psutil.wait_procs(tree, timeout=timeout)
    left = [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in alive if _running(p)]
    for p in alive:
        p.kill()
    hub.process.wait(timeout=30)
    return left


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def write_lab_settings(home: Path, owner: str | None = None) -> None:
    """The test's JupyterLab settings for a user (every cell in the page, no news pop-up), theirs."""
    settings = home / ".jupyter" / "lab" / "user-settings"
    for name, values in SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))
    if owner is not None:
        entry = pwd.getpwnam(owner)
        for path in [home / ".jupyter", *(home / ".jupyter").rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid)


class HubServer:
    """What LabNotebook needs of a server, for one user's single-user server behind the hub."""

    def __init__(self, hub: RunningHub, user: str) -> None:
        self.hub, self.user, self.workspace = hub, user, hub.home(user)

    def notebook_url(self, path: str) -> str:
        return f"{self.hub.base}/user/{self.user}/lab/tree/{quote(path)}?reset"

    def modified(self, path: str) -> str:
        return str((self.workspace / path).stat().st_mtime_ns)

    def saved_notebook(self, path: str) -> nbformat.NotebookNode:
        return nbformat.read(self.workspace / path, as_version=4)

    def kernels_idle(self) -> bool:
        return True  # LabNotebook.wait_idle also reads the kernel's state in the page

    def shutdown_kernels(self) -> None:
        """Kernels stop with the user's server when the hub stops (asserted by the test)."""


class HubUser:
    """One user in a browser context of their own: logs in, uses the Assignments tab."""

    def __init__(self, instance, hub: RunningHub, name: str, shots: Path) -> None:
        self.hub, self.name, self.shots = hub, name, shots
        self.context = instance.new_context(viewport=chromium.VIEWPORT)
        self.page = self.context.new_page()
        self.page.set_default_timeout(120_000)
        self.server = HubServer(hub, name)

    def login(self) -> HubUser:
        """The hub's login form (NativeAuthenticator: their one-time password, then the change-password form it
        leads to), then JupyterLab once the server is up."""
        self.page.goto(f"{self.hub.base}/hub/login")
        self.page.fill("input[name=username]", self.name)
        self.page.fill("input[name=password]", self.hub.passwords[self.name])
        self.page.click("[type=submit]")
        self.page.wait_for_load_state()
        if self.page.url.endswith("/hub/change-password"):  # a first sign-in: choose a password of one's own
            chosen = secrets.token_urlsafe(12)
            self.page.fill("input[name=old_password]", self.hub.passwords[self.name])
            self.page.fill("input[name=new_password]", chosen)
            self.page.fill("input[name=new_password_confirmation]", chosen)
            self.page.click("[type=submit]")
            self.page.get_by_text("changed successfully").wait_for()
            self.hub.passwords[self.name] = chosen
            self.page.goto(f"{self.hub.base}/hub/spawn")
        self.page.wait_for_selector(LAB_SHELL, timeout=300_000)
        assert self.page.url.startswith(f"{self.hub.base}/user/{self.name}/lab"), self.page.url
        return self

    def nbgrader_menu(self, attempts: int = 3) -> list[str]:
        """The items of JupyterLab's Nbgrader menu (left open).

        A click on the label of an open menu closes it, and a click that lands while a busy page re-renders
        its menu bar opens nothing: the label is clicked only while the menu is closed, up to ``attempts``
        times, 30 s apart; a screenshot of each miss is kept."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        menu = self.page.locator("#jp-mainmenu-nbgrader")
        for attempt in range(1, attempts + 1):
            if not menu.is_visible():
                self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Nbgrader$")).click()
            try:
                menu.wait_for(timeout=30_000)
                break
            except PlaywrightTimeout:
                self.shot(f"nbgrader_menu_missed_{attempt}")
        else:
            raise AssertionError(
                f"{self.name}: the Nbgrader menu did not open after {attempts} clicks "
                f"(screenshots {self.name}__nbgrader_menu_missed_*.png)"
            )
        return [t.strip() for t in menu.locator(".lm-Menu-itemLabel").all_inner_texts() if t.strip()]

    def open_assignments(self) -> None:
        """Nbgrader > Assignment List: the Assignments tab, once its three lists have loaded."""
        if "Assignment List" not in self.nbgrader_menu():
            raise AssertionError(f"{self.name}: no Assignment List in the Nbgrader menu")
        self.page.locator(
            "#jp-mainmenu-nbgrader .lm-Menu-itemLabel", has_text=re.compile("^Assignment List$")
        ).click()
        for listing in (RELEASED, FETCHED, SUBMITTED):
            self.page.wait_for_selector(f"{listing}_loading", state="hidden")

    def refresh_assignments(self) -> None:
        """Reload the page and open the Assignments tab again (what the student sees now)."""
        self.page.reload()
        self.page.wait_for_selector(LAB_SHELL, timeout=300_000)
        self.open_assignments()

    def item(self, listing: str, assignment: str):
        """The row of ``assignment`` in one of the Assignments tab's lists (waits for it)."""
        row = self.page.locator(
            f"{listing} > .list_item", has=self.page.locator(".item_name", has_text=assignment)
        )
        row.first.wait_for()
        return row.first

    def click_in(self, listing: str, assignment: str, button: str) -> None:
        self.item(listing, assignment).locator(
            "button", has_text=re.compile(f"^{re.escape(button)}$")
        ).click()

    def shot(self, name: str) -> Path:
        path = self.shots / f"{self.name}__{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path))
        return path

    def close(self) -> None:
        self.context.close()


def text_of(page) -> str:
    """The page's visible text, whitespace collapsed."""
    return " ".join(page.locator("body").inner_text().split())
