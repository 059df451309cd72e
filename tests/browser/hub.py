"""Drive `labs hub` like its users: log in, the Assignments tab (fetch, submit, fetch feedback), a notebook.

Each user has a browser context of their own (their own hub cookie). Notebooks are driven with
tests/browser/jupyterlab.py's LabNotebook through :class:`HubServer`, which reads what the server saved from the
user's home on disk (the hub runs on this machine) instead of through a token-authenticated REST API.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import nbformat
import psutil

from tests.browser import chromium
from tests.browser.jupyterlab import SETTINGS, free_port
from tests.conftest import BIN, labs_env

LAB_SHELL = "#jp-main-dock-panel"
RELEASED, FETCHED, SUBMITTED = "#released_assignments_list", "#fetched_assignments_list", "#submitted_assignments_list"


@dataclass
class RunningHub:
    """A running `labs hub`: where it listens, its folders, its process."""

    port: int
    root: Path
    process: subprocess.Popen
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

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
        return "\n".join("\n".join(f.read_text(errors="replace").splitlines()[-lines:]) for f in files if f.exists())


@contextmanager
def hub_server(scratch: Path, grading: Path, startup_timeout: float = 180) -> Iterator[RunningHub]:
    """``labs hub --port P --root scratch/hub --grading GRADING`` until the block ends, then SIGTERM."""
    port, root, log = free_port(), scratch / "hub", scratch / "labs_hub.log"
    with log.open("w") as out:
        process = subprocess.Popen([str(BIN / "labs"), "hub", "--port", str(port), "--root", str(root),
                                    "--grading", str(grading)], cwd=scratch, env=labs_env(), stdout=out,
                                   stderr=subprocess.STDOUT)
    hub = RunningHub(port, root, process, log)
    try:
        _wait_until_up(hub, startup_timeout)
        yield hub
    finally:
        stop_hub(hub)


def _wait_until_up(hub: RunningHub, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if hub.process.poll() is not None:
            raise RuntimeError(f"labs hub exited with {hub.process.returncode}:\n{hub.log_tail()}")
        try:
            with urllib.request.urlopen(f"{hub.base}/hub/api", timeout=5):
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


def write_lab_settings(home: Path) -> None:
    """The test's JupyterLab settings for a user (every cell in the page, no news pop-up)."""
    settings = home / ".jupyter" / "lab" / "user-settings"
    for name, values in SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))


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
        """The hub's login form (test authenticator: any password), then JupyterLab once the server is up."""
        self.page.goto(f"{self.hub.base}/hub/login")
        self.page.fill("input[name=username]", self.name)
        self.page.fill("input[name=password]", "any password")
        self.page.click("[type=submit]")
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
            raise AssertionError(f"{self.name}: the Nbgrader menu did not open after {attempts} clicks "
                                 f"(screenshots {self.name}__nbgrader_menu_missed_*.png)")
        return [t.strip() for t in menu.locator(".lm-Menu-itemLabel").all_inner_texts() if t.strip()]

    def open_assignments(self) -> None:
        """Nbgrader > Assignment List: the Assignments tab, once its three lists have loaded."""
        if "Assignment List" not in self.nbgrader_menu():
            raise AssertionError(f"{self.name}: no Assignment List in the Nbgrader menu")
        self.page.locator("#jp-mainmenu-nbgrader .lm-Menu-itemLabel", has_text=re.compile("^Assignment List$")).click()
        for listing in (RELEASED, FETCHED, SUBMITTED):
            self.page.wait_for_selector(f"{listing}_loading", state="hidden")

    def refresh_assignments(self) -> None:
        """Reload the page and open the Assignments tab again (what the student sees now)."""
        self.page.reload()
        self.page.wait_for_selector(LAB_SHELL, timeout=300_000)
        self.open_assignments()

    def item(self, listing: str, assignment: str):
        """The row of ``assignment`` in one of the Assignments tab's lists (waits for it)."""
        row = self.page.locator(f"{listing} > .list_item", has=self.page.locator(".item_name", has_text=assignment))
        row.first.wait_for()
        return row.first

    def click_in(self, listing: str, assignment: str, button: str) -> None:
        self.item(listing, assignment).locator("button", has_text=re.compile(f"^{re.escape(button)}$")).click()

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

