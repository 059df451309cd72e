"""One person's session with a `labs hub` over HTTP and websockets, as their browser would hold it.

:class:`HubSession` signs in through the hub's login form (the real authenticator), waits for the person's
server, and then uses it with the same cookies: the Jupyter REST API, a kernel over its websocket
(``/api/kernels/<id>/channels``, Jupyter's JSON messages), a terminal over its websocket, nbgrader's Assignments
handlers (fetch, submit). tests/test_hub_class.py attacks with it; benchmarks/bench_hub_load.py runs a class
with it. asyncio throughout, so one process can be twenty students at once.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import quote

import httpx
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

END = "__labs_end__"
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")  # a terminal's colours, modes and titles


@dataclass
class CellResult:
    """What one cell did: ``ok``, ``error`` (``error`` holds its name and value) or ``died`` (the kernel)."""

    status: str
    output: str = ""
    error: str = ""
    seconds: float = 0.0


@dataclass
class HubSession:
    """A person signed in to the hub at ``base`` (``http://127.0.0.1:PORT``)."""

    base: str
    name: str
    password: str
    client: httpx.AsyncClient = field(init=False)
    timings: dict[str, float] = field(default_factory=dict)
    must_choose_password: bool = (
        False  # the last sign-in used a one-time password: the hub asked for a new one
    )

    def __post_init__(self) -> None:
        self.client = httpx.AsyncClient(base_url=self.base, follow_redirects=True, timeout=120, verify=False)

    async def close(self) -> None:
        await self.client.aclose()

    @property
    def server(self) -> str:
        return f"/user/{self.name}"

    def _cookie(self, name: str, path: str) -> str | None:
        best = None
        for cookie in self.client.cookies.jar:
            if (
                cookie.name == name
                and path.startswith(cookie.path)
                and (best is None or len(cookie.path) > len(best.path))
            ):
                best = cookie
        return best.value if best else None

    def _xsrf(self, path: str) -> dict[str, str]:
        token = self._cookie("_xsrf", path)
        return {"X-XSRFToken": token} if token else {}

    def cookie_header(self, path: str) -> str:
        """The cookies a browser would send to ``path``."""
        return "; ".join(f"{c.name}={c.value}" for c in self.client.cookies.jar if path.startswith(c.path))

    async def sign_in(self) -> bool:
        """The hub's login form with the person's password; True if the hub let them in."""
        await self.client.get("/hub/login")
        response = await self.client.post(
            "/hub/login",
            data={
                "username": self.name,
                "password": self.password,
                "_xsrf": self._cookie("_xsrf", "/hub/") or "",
            },
            headers=self._xsrf("/hub/"),
        )
        self.must_choose_password = response.url.path.endswith("/hub/change-password")
        return self._cookie("jupyterhub-hub-login", "/hub/") is not None and "/hub/login" not in str(
            response.url
        )

    async def choose_password(self, new: str | None = None) -> str:
        """The change-password form, as a person signed in with their one-time password fills it: ``new`` (a
        random one when None) replaces it; returns the new password, raises if the hub refused it."""
        new = new or secrets.token_urlsafe(12)
        response = await self.client.post(
            "/hub/change-password",
            data={
                "old_password": self.password,
                "new_password": new,
                "new_password_confirmation": new,
                "_xsrf": self._cookie("_xsrf", "/hub/") or "",
            },
            headers=self._xsrf("/hub/"),
        )
        if "changed successfully" not in response.text:
            raise RuntimeError(f"{self.name}: the hub refused the new password ({response.status_code})")
        self.password, self.must_choose_password = new, False
        return new

    async def start_server(self, timeout: float = 300) -> None:
        """Ask the hub for the person's server (as the home page's Start button does) and wait until it answers
        its own API through the proxy, the OAuth hand-shake with the hub done on the way."""
        await self.client.get("/hub/spawn")
        deadline, last = time.monotonic() + timeout, "nothing"
        while (
            time.monotonic() < deadline
        ):  # the hub's spawn-pending page until the server answers JupyterLab's
            response = await self.client.get(f"{self.server}/lab")  # the page sets the server's _xsrf cookie
            if response.status_code == 200 and response.url.path == f"{self.server}/lab":
                return
            if response.status_code >= 400 and "/spawn-pending/" in response.url.path:
                raise RuntimeError(
                    f"{self.name}'s server failed to start ({response.status_code}; the hub's log says why)"
                )
            last = f"{response.status_code} at {response.url.path}"
            await asyncio.sleep(0.5)
        raise TimeoutError(f"{self.name}'s server did not answer within {timeout:.0f} s (last: {last})")

    async def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        """A request to ``path`` (under the hub's URL) with the person's cookies and XSRF header."""
        headers = {**self._xsrf(path), **kwargs.pop("headers", {})}
        return await self.client.request(method, path, headers=headers, follow_redirects=False, **kwargs)

    async def websocket(self, path: str) -> WebSocketClientConnection:
        url = self.base.replace("http", "ws", 1) + path
        request = HTTPRequest(
            url,
            headers={"Cookie": self.cookie_header(path)},
            validate_cert=False,
            connect_timeout=300,
            request_timeout=300,
        )  # tornado's 20 s: too short for a busy class
        return await websocket_connect(request, max_message_size=64 << 20)

    async def start_kernel(self) -> Kernel:
        """A new python3 kernel on the person's server, connected and answering."""
        response = await self.api("POST", f"{self.server}/api/kernels", json={"name": "python3"})
        response.raise_for_status()
        kernel_id = response.json()["id"]
        kernel = Kernel(
            self, kernel_id, await self.websocket(f"{self.server}/api/kernels/{kernel_id}/channels")
        )
        await kernel.ready()
        return kernel

    async def terminal(self) -> Terminal:
        """A new terminal on the person's server (a shell as their unix user)."""
        response = await self.api("POST", f"{self.server}/api/terminals")
        response.raise_for_status()
        name = response.json()["name"]
        terminal = Terminal(await self.websocket(f"{self.server}/terminals/websocket/{quote(name)}"))
        await terminal.run("true")
        return terminal

    async def assignment(self, action: str, assignment_id: str, course_id: str = "pytorch-labs") -> dict:
        """nbgrader's Assignments tab: ``fetch``, ``submit`` or ``fetch_feedback``; its JSON answer."""
        response = await self.api(
            "POST",
            f"{self.server}/assignments/{action}",
            data={"assignment_id": assignment_id, "course_id": course_id},
        )
        response.raise_for_status()
        return response.json()

    async def sign_out(self) -> None:
        await self.client.get("/hub/logout")


class Kernel:
    """A kernel's websocket: execute cells, read their outputs."""

    def __init__(self, session: HubSession, kernel_id: str, socket: WebSocketClientConnection) -> None:
        self.session, self.id, self.socket = session, kernel_id, socket
        self.session_id = uuid.uuid4().hex

    def _message(self, msg_type: str, content: dict, channel: str = "shell") -> dict:
        return {
            "header": {
                "msg_id": uuid.uuid4().hex,
                "msg_type": msg_type,
                "username": self.session.name,
                "session": self.session_id,
                "version": "5.3",
                "date": datetime.now(timezone.utc).isoformat(),
            },
            "parent_header": {},
            "metadata": {},
            "content": content,
            "channel": channel,
            "buffers": [],
        }

    async def ready(self, timeout: float = 120) -> None:
        """Wait for the kernel's answer to kernel_info (it has started)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            request = self._message("kernel_info_request", {})
            await self.socket.write_message(json.dumps(request))
            try:
                while True:
                    reply = await self._read(max(0.1, min(2.0, deadline - time.monotonic())))
                    if (
                        reply["msg_type"] == "kernel_info_reply"
                        and reply["parent_header"].get("msg_id") == request["header"]["msg_id"]
                    ):
                        return
            except asyncio.TimeoutError:
                continue
        raise TimeoutError(f"{self.session.name}'s kernel did not answer kernel_info in {timeout:.0f} s")

    async def _read(self, timeout: float) -> dict:
        raw = await asyncio.wait_for(self.socket.read_message(), timeout)
        if raw is None:
            raise ConnectionError("the kernel's websocket closed")
        message = json.loads(raw)
        message["msg_type"] = message.get("msg_type") or message["header"]["msg_type"]
        return message

    async def execute(self, code: str, timeout: float = 300) -> CellResult:
        """Run ``code``; its printed output, its error, or ``died`` when the kernel died or restarted under it."""
        request = self._message(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )
        msg_id = request["header"]["msg_id"]
        start = time.monotonic()
        await self.socket.write_message(json.dumps(request))
        output: list[str] = []
        error, replied, idle = "", None, False
        deadline = start + timeout
        while not (replied and idle):
            try:
                message = await self._read(max(0.1, deadline - time.monotonic()))
            except ConnectionError:
                return CellResult("died", "".join(output), "websocket closed", time.monotonic() - start)
            kind, content = message["msg_type"], message.get("content", {})
            if kind == "status" and content.get("execution_state") in ("restarting", "dead"):
                return CellResult(
                    "died", "".join(output), content["execution_state"], time.monotonic() - start
                )
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if kind == "stream":
                output.append(content.get("text", ""))
            elif kind in ("execute_result", "display_data"):
                output.append(content.get("data", {}).get("text/plain", "") + "\n")
            elif kind == "error":
                error = f"{content.get('ename')}: {content.get('evalue')}"
            elif kind == "execute_reply":
                replied = content.get("status", "error")
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
        status = "ok" if replied == "ok" else "error"
        return CellResult(status, "".join(output), error, time.monotonic() - start)

    async def close(self) -> None:
        self.socket.close()
        await self.session.api("DELETE", f"{self.session.server}/api/kernels/{self.id}")


class Terminal:
    """A terminal's websocket: run a shell command, read what it printed and its exit status."""

    def __init__(self, socket: WebSocketClientConnection) -> None:
        self.socket = socket

    async def run(self, command: str, timeout: float = 60) -> tuple[int, str]:
        """``command`` in the shell; (exit status, what it printed)."""
        await self.socket.write_message(json.dumps(["stdin", f"{command}; echo {END}$?{END}\r"]))
        seen, deadline = "", time.monotonic() + timeout
        pattern = re.compile(rf"{END}(\d+){END}")
        while not (found := pattern.search(seen)):
            raw = await asyncio.wait_for(self.socket.read_message(), max(0.1, deadline - time.monotonic()))
            if raw is None:
                raise ConnectionError("the terminal's websocket closed")
            kind, *rest = json.loads(raw)
            if kind == "stdout":
                seen += rest[0]
        text = seen[: found.start()]
        text = text.split(f"{END}$?{END}", 1)[-1]  # after the echoed command line
        return int(found.group(1)), ESCAPES.sub("", text).replace("\r", "").strip()

    def close(self) -> None:
        self.socket.close()
