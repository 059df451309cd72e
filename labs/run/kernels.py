"""Warm kernels: the next notebook's kernel starts (and imports torch) while the current one runs.

A kernel is never reused: each notebook gets a fresh process, so no state leaks between notebooks.
What is shared is only the start-up cost, paid ahead of time, and, when a zygote runs
(:mod:`labs.run.forked`), the imports themselves: the kernel is forked from a process that made them.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from dataclasses import dataclass
from pathlib import Path

from jupyter_client import AsyncKernelManager
from jupyter_client.blocking import BlockingKernelClient
from jupyter_core.utils import run_sync

from labs.run.forked import ZygoteAddress, runtime_dir, use_zygote
from zygote.client import ForkedChild

# Deprecations attributed to notebook code (__main__) or labutils fail the cell that raised them.
PRELUDE = """
import warnings as _w
for _c in (DeprecationWarning, FutureWarning):
    _w.filterwarnings("error", category=_c, module=r"(__main__|labutils(\\..*)?)$")
del _w, _c
import torch, labutils
"""

POSTLUDE = """
import json as _j, resource as _r, sys as _s
_t = _s.modules.get("torch")
_cuda = _t is not None and _t.cuda.is_available() and _t.cuda.is_initialized()
print(_j.dumps({
    "children_rss_kb": _r.getrusage(_r.RUSAGE_CHILDREN).ru_maxrss,
    "cuda_peak_bytes": _t.cuda.max_memory_allocated() if _cuda else None,
}))
del _j, _r, _s, _t, _cuda
"""


@dataclass
class WarmKernel:
    """A started kernel whose prelude (warning filters, ``import torch``) has been sent."""

    manager: AsyncKernelManager
    client: BlockingKernelClient
    prelude_id: str

    @property
    def pid(self) -> int | None:
        process = getattr(self.manager.provisioner, "process", None)
        return process.pid if process is not None else None

    @property
    def forked(self) -> bool:
        """Whether the kernel was forked from the zygote (False: started cold)."""
        return isinstance(getattr(self.manager.provisioner, "process", None), ForkedChild)

    def ready(self, cwd: Path, timeout: float = 120, environ: dict[str, str] | None = None) -> None:
        """Wait for the prelude, then move the kernel into the notebook's working folder (and set ``environ``)."""
        _wait_reply(self.client, self.prelude_id, timeout)
        code = f"import os; os.chdir({str(cwd)!r}); os.environ.update({dict(environ or {})!r})"
        _wait_reply(self.client, self.client.execute(code, silent=True), 30)

    def peak_rss_bytes(self) -> int | None:
        """High-water RSS of the kernel process (VmHWM), read from outside the kernel."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return None

    def postlude(self, timeout: float = 10) -> dict:
        """Children's peak RSS and CUDA peak memory, asked of the kernel after the notebook ran."""
        msg_id = self.client.execute(POSTLUDE, silent=False, store_history=False)
        text = ""
        try:
            while True:
                msg = self.client.get_iopub_msg(timeout=timeout)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                if msg["msg_type"] == "stream":
                    text += msg["content"]["text"]
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    break
            return json.loads(text.strip().splitlines()[-1])
        except Exception:  # noqa: BLE001 - the figures are extras: a kernel that cannot give them leaves them out
            return {}

    def kill(self) -> None:
        """Kill the kernel and everything it started (its own session, so its pid is its group's id)."""
        pid = self.pid
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def shutdown(self) -> None:
        """Stop channels and kill the kernel's process group; no graceful wait."""
        self.client.stop_channels()
        self.kill()
        try:
            run_sync(self.manager.cleanup_resources)()
        except Exception:  # noqa: BLE001 - the process group is already killed: what is left is best effort
            pass


def _wait_reply(client: BlockingKernelClient, msg_id: str, timeout: float) -> None:
    while True:
        reply = client.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            if reply["content"]["status"] != "ok":
                raise RuntimeError(f"kernel prelude failed: {reply['content'].get('evalue')}")
            return


def _ipc_path() -> str:
    # IPC sockets: no TCP ports to collide between concurrent runs, nothing reachable from the network.
    return str(runtime_dir() / uuid.uuid4().hex[:12])


def start_warm_kernel(
    env: dict[str, str], kernel_name: str = "python3", zygote: ZygoteAddress | None = None
) -> WarmKernel:
    """Start a kernel in its own process group and send it the prelude without waiting.

    With a ``zygote``, the kernel is forked from it (falling back to a cold start if it cannot).
    The manager is asynchronous because nbclient needs one to notice a dead kernel; our own
    prelude/postlude traffic goes through a separate blocking client on the same connection.
    """
    manager = AsyncKernelManager(kernel_name=kernel_name, transport="ipc", ip=_ipc_path())
    if zygote is not None:
        use_zygote(manager, zygote)
    run_sync(manager.start_kernel)(env=env)
    client = BlockingKernelClient()
    client.load_connection_info(manager.get_connection_info())
    client.start_channels(hb=False)  # a parentless client's heartbeat check would fail before the first beat
    client.wait_for_ready(timeout=120)
    return WarmKernel(manager, client, client.execute(PRELUDE, silent=True))
