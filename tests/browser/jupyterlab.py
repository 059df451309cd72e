"""Drive JupyterLab like a student: `labs lab` on a private workspace, notebooks run from the menus.

The server runs from a scratch folder (so `labs lab`'s release lands in ``scratch/build/grading``) with its
own settings, workspaces and runtime folders: no state is shared with a developer's JupyterLab or other tests.
Settings turn off cell windowing (every cell stays in the page, so outputs can be inspected) and the news
pop-up. Errors are read from the notebook as JupyterLab saved it (``output_type == "error"``), because
JupyterLab renders tracebacks and stderr alike (``application/vnd.jupyter.stderr``).
"""

from __future__ import annotations

import json
import os
import re
import socket
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

from tests.conftest import BIN, labs_env

SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}
CELLS = ".jp-NotebookPanel .jp-Notebook .jp-Cell"
MAIN_AREA = "#jp-main-dock-panel"
INDICATOR = ".jp-NotebookPanel .jp-Notebook-ExecutionIndicator"

# Per code cell: its prompt, and the pictures its outputs hold (decoded <img>, laid-out <svg>).
CELL_STATE_JS = """(cells) => cells.map(cell => {
  const prompt = cell.querySelector('.jp-InputPrompt');
  let ok = 0, bad = 0;
  for (const out of cell.querySelectorAll('.jp-OutputArea-output')) {
    for (const img of out.querySelectorAll('img')) (img.complete && img.naturalWidth > 0) ? ok++ : bad++;
    for (const svg of out.querySelectorAll('svg')) {
      const box = svg.getBoundingClientRect();
      (box.width > 0 && box.height > 0) ? ok++ : bad++;
    }
  }
  return {code: cell.classList.contains('jp-CodeCell'), prompt: prompt ? prompt.textContent.trim() : '',
          pictures: ok, broken: bad};
})"""


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabServer:
    """A running `labs lab`: where it listens and which folder is the student's."""

    port: int
    token: str
    workspace: Path
    process: subprocess.Popen
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def notebook_url(self, path: str) -> str:
        """JupyterLab with only ``path`` open (``reset`` drops any saved layout)."""
        return f"{self.base}/lab/tree/{quote(path)}?token={self.token}&reset"

    def api(self, path: str, method: str = "GET") -> object:
        """Call the Jupyter server REST API with the token; JSON answer (None when empty)."""
        request = urllib.request.Request(
            f"{self.base}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def saved_notebook(self, path: str) -> nbformat.NotebookNode:
        """The notebook as the server has it on disk (after JupyterLab saved it)."""
        model = self.api(f"/api/contents/{quote(path)}?content=1&type=notebook")
        return nbformat.from_dict(model["content"])

    def modified(self, path: str) -> str:
        return self.api(f"/api/contents/{quote(path)}?content=0")["last_modified"]

    def kernels_idle(self) -> bool:
        return all(k.get("execution_state") == "idle" for k in self.api("/api/kernels"))

    def shutdown_kernels(self) -> None:
        for kernel in self.api("/api/kernels"):
            self.api(f"/api/kernels/{kernel['id']}", method="DELETE")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def _private_jupyter_dirs(scratch: Path) -> dict[str, str]:
    settings = scratch / "jupyter" / "settings"
    for name, values in SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))
    config = scratch / "jupyter" / "config"  # no user config: the server runs as `labs lab` configures it
    config.mkdir(parents=True, exist_ok=True)
    return {
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "jupyter" / "ws"),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(scratch / "jupyter" / "runtime"),
    }


@contextmanager
def lab_server(scratch: Path, course: Path, startup_timeout: float = 600) -> Iterator[LabServer]:
    """``labs lab --port P --token T --no-browser --workspace scratch/student`` until the block ends."""
    port, token = free_port(), f"browser-test-{os.getpid()}"
    env = labs_env() | _private_jupyter_dirs(scratch)
    log = scratch / "labs_lab.log"
    workspace = scratch / "student"
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                str(BIN / "labs"),
                "lab",
                "--port",
                str(port),
                "--token",
                token,
                "--no-browser",
                "--workspace",
                str(workspace),
                "--course",
                str(course),
            ],
            cwd=scratch,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = LabServer(port, token, workspace, process, log)
    try:
        _wait_until_serving(server, startup_timeout)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def _wait_until_serving(server: LabServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"labs lab exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            server.api("/api/status")
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(1)
    raise TimeoutError(f"labs lab did not answer within {timeout:.0f} s:\n{server.log_tail()}")


class LabNotebook:
    """One notebook open in JupyterLab: in a page of its own, or in ``page`` (one JupyterLab app for many
    notebooks, each opened with File > Open from Path… and closed with File > Close Tab, as a student does)."""

    def __init__(self, context, server: LabServer, path: str, page=None) -> None:
        self.server, self.path, self.shared = server, path, page is not None
        self.page = page or context.new_page()
        self.page.set_default_timeout(120_000)

    def open(self) -> LabNotebook:
        if self.shared and self.page.locator(MAIN_AREA).count():
            self.menu("File", "Open from Path…")
            self.page.locator(".jp-Dialog input").fill(self.path)
            self.page.locator(".jp-Dialog .jp-mod-accept").click()
        else:
            self.page.goto(self.server.notebook_url(self.path))
        self.page.wait_for_selector(CELLS, timeout=300_000)
        self.wait_idle(timeout=300)
        return self

    def close(self) -> None:
        self.server.shutdown_kernels()
        if not self.shared:
            self.page.close()
            return
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.menu("File", "Close Tab")
        try:
            self.page.wait_for_function(f"() => !document.querySelector('{CELLS}')", timeout=10_000)
        except PlaywrightTimeout:  # a dialog (unsaved changes after a failure): the next open reloads the app
            self.page.goto("about:blank")

    @property
    def cells(self):
        return self.page.locator(CELLS)

    def set_source(self, index: int, text: str) -> None:
        """Replace cell ``index``'s text as a student would: expand it if its input is collapsed (a lesson's
        parameters cell and self-checks are), click in, select all, paste."""
        collapsed = self.cells.nth(index).locator(".jp-InputPlaceholder")
        if collapsed.count():
            collapsed.scroll_into_view_if_needed()
            collapsed.click()
        editor = self.cells.nth(index).locator(".cm-content")
        editor.scroll_into_view_if_needed()
        editor.click()
        self.page.keyboard.press("Control+a")
        editor.evaluate(
            """(el, text) => {
            const data = new DataTransfer();
            data.setData('text/plain', text);
            const init = {clipboardData: data, bubbles: true, cancelable: true};
            el.dispatchEvent(new ClipboardEvent('paste', init));
        }""",
            text,
        )
        shown = editor.inner_text()
        if _lines(shown) != _lines(text):
            raise AssertionError(f"cell {index} of {self.path} shows {shown!r} after pasting {text!r}")
        self.page.keyboard.press("Escape")  # back to command mode

    def select(self, index: int) -> None:
        prompt = self.cells.nth(index).locator(".jp-InputPrompt")
        prompt.scroll_into_view_if_needed()
        prompt.click()

    def run_selected(self) -> None:
        """Run > Run Selected Cell (Shift+Enter in command mode)."""
        self.page.keyboard.press("Shift+Enter")

    def menu(self, menu: str, item: str) -> None:
        """Click a main-menu item, e.g. ``menu("Run", "Run All Cells")``."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(menu)}$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).first.click()

    def cell_states(self) -> list[dict]:
        return self.cells.evaluate_all(CELL_STATE_JS)

    def wait_idle(self, timeout: float = 900, settle: int = 3, poll_ms: int = 500) -> None:
        """Until no cell is queued or running and the kernel is idle (UI and REST) for ``settle`` polls in a row
        (each poll reads every cell of the page and asks the server: twice a second is enough)."""
        deadline, calm = time.monotonic() + timeout, 0
        self.page.wait_for_timeout(poll_ms)
        while calm < settle:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.path}: kernel still busy after {timeout:.0f} s "
                    f"(prompts {[s['prompt'] for s in self.cell_states() if s['code']]})"
                )
            busy = any("*" in s["prompt"] for s in self.cell_states() if s["code"])
            status = self.page.locator(INDICATOR).get_attribute("data-status")
            calm = calm + 1 if (not busy and status == "idle" and self.server.kernels_idle()) else 0
            self.page.wait_for_timeout(poll_ms)

    def save(self, timeout: float = 60) -> nbformat.NotebookNode:
        """File > Save Notebook, wait until the server has the new file, return the notebook as saved."""
        before = self.server.modified(self.path)
        self.menu("File", "Save Notebook")
        deadline = time.monotonic() + timeout
        while self.server.modified(self.path) == before:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.path}: not saved within {timeout:.0f} s")
            self.page.wait_for_timeout(500)
        dirty = ".lm-TabBar-tab.jp-mod-current.jp-mod-dirty"
        self.page.wait_for_function(f"() => !document.querySelector('{dirty}')")
        return self.server.saved_notebook(self.path)

    def wait_for_pictures(self, index: int, timeout: float = 30) -> dict:
        """Cell ``index``'s picture counts once its images are decoded (or the timeout passes)."""
        self.cells.nth(index).scroll_into_view_if_needed()
        deadline = time.monotonic() + timeout
        while True:
            state = self.cell_states()[index]
            if (state["pictures"] and not state["broken"]) or time.monotonic() > deadline:
                return state
            self.page.wait_for_timeout(500)

    def screenshot(self, path: Path, cell: int | None = None) -> Path:
        if cell is not None:
            self.cells.nth(cell).scroll_into_view_if_needed()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path))
        return path


def _lines(text: str) -> list[str]:
    """Non-blank lines (innerText renders an empty editor line as two newlines); the saved file is exact."""
    return [line.rstrip().replace("\u00a0", " ") for line in text.splitlines() if line.strip()]


def error_outputs(nb: nbformat.NotebookNode, upto: int | None = None) -> list[str]:
    """``cell i: Ename: evalue`` for each error output (cells before ``upto`` when given)."""
    found = []
    for i, cell in enumerate(nb.cells[:upto]):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.output_type == "error":
                found.append(f"cell {i}: {output.ename}: {output.evalue}")
    return found


def picture_cells(nb: nbformat.NotebookNode) -> list[int]:
    """Cells with an image output (PNG, JPEG or SVG) in the saved notebook."""
    kinds = ("image/png", "image/jpeg", "image/svg+xml")
    return [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and any(kind in output.get("data", {}) for output in cell.outputs for kind in kinds)
    ]
