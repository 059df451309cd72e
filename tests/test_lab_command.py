"""`labs lab`: the URL is printed once the server answers, students get no instructor panels, and
stopping it (SIGTERM) stops JupyterLab too."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.conftest import BIN, FIXTURES, labs_env

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_url_printed_once_listening_and_instructor_plugins_disabled(tmp_path: Path):
    port, token = _free_port(), "t0ken"
    env = labs_env() | {
        "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
    }
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
            str(tmp_path / "student"),
            "--course",
            str(FIXTURES / "course"),
            "--root",
            str(tmp_path / "grading"),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        line = ""
        while time.monotonic() < deadline and "JupyterLab: http" not in line:
            line = process.stdout.readline()
            assert line or process.poll() is None, "labs lab exited before printing the URL"
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # listening when the URL appears
        assert line.strip() == f"JupyterLab: http://127.0.0.1:{port}/lab?token={token}"
        page = (
            urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=30).read().decode()
        )
        config = json.loads(
            re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S)[
                1
            ]
        )
        disabled = config["disabledExtensions"]
        for plugin in (
            "@jupyter/nbgrader:create-assignment",
            "@jupyter/nbgrader:formgrader",
            "@jupyterlab/apputils-extension:announcements",
        ):
            assert plugin in disabled, (plugin, disabled)
        assert "@jupyter/nbgrader:assignment-list" not in disabled
    finally:
        server = psutil.Process(process.pid).children(recursive=True)
        process.terminate()
        process.wait(timeout=60)
    assert [p.pid for p in server if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == [], (
        "stopping labs lab left JupyterLab running"
    )
