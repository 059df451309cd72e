"""The python3 kernel of a class's servers: ipykernel's own, with no TCP port another user could reach.

`labs hub` runs every kernel with ``transport="ipc"`` (its channels are unix sockets in the server's private
runtime folder), but ipykernel still binds one TCP port of its own on 127.0.0.1: the pipe through which forked
subprocesses (a DataLoader's workers) send their output to the kernel. Anyone on the machine can connect to it,
and the kernel prints what it refuses ("Bad pipe message: ...") into its user's cell output. Here that pipe is a
unix socket in the same private runtime folder instead; everything else is ipykernel's ``ipykernel_launcher``.

Run as ``python .../labs/hub/kernel.py -f CONNECTION_FILE`` (the kernel spec :func:`kernel_spec` writes): a
script, not ``-m labs.hub.kernel``, so that a kernel does not import the `labs.hub` package (0.6 s, psutil,
graders) before the student's first cell. It imports nothing but the standard library before ipykernel.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid

PIPE_FOLDER = os.environ.get("JUPYTER_RUNTIME_DIR") or tempfile.gettempdir()


def kernel_spec(python: str) -> dict:
    """The ``kernel.json`` of the class's python3 kernel (it replaces ipykernel's own of the same name); no
    debugger (its adapter listens on a TCP port while a student debugs)."""
    return {
        "argv": [python, os.path.abspath(__file__), "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "metadata": {"debugger": False},
        "kernel_protocol_version": "5.5",
    }


def pipe_on_unix_socket() -> None:
    """Make ipykernel's subprocess-output pipe a unix socket in :data:`PIPE_FOLDER` (mode 0700)."""
    import zmq
    from ipykernel import iostream
    from zmq.eventloop.zmqstream import ZMQStream

    def setup_pipe_in(self) -> None:
        self._pipe_uuid = os.urandom(16)
        pipe_in = self.socket.context.socket(zmq.PULL)
        pipe_in.linger = 0
        os.makedirs(PIPE_FOLDER, mode=0o700, exist_ok=True)
        self._pipe_address = f"ipc://{PIPE_FOLDER}/pipe-{uuid.uuid4().hex[:16]}"
        pipe_in.bind(self._pipe_address)
        self._pipe_in = ZMQStream(pipe_in, self.io_loop)
        self._pipe_in.on_recv(self._handle_pipe_msg)

    def setup_pipe_out(self):
        context = zmq.Context()  # a new one after fork, as ipykernel's
        pipe_out = context.socket(zmq.PUSH)
        pipe_out.linger = 3000
        pipe_out.connect(self._pipe_address)
        return context, pipe_out

    setattr(iostream.IOPubThread, "_setup_pipe_in", setup_pipe_in)  # noqa: B010 - a method replaced on purpose
    setattr(iostream.IOPubThread, "_setup_pipe_out", setup_pipe_out)  # noqa: B010


def main() -> None:
    """ipykernel_launcher, the pipe moved first."""
    if sys.path and os.path.abspath(sys.path[0] or ".") in (
        os.getcwd(),
        os.path.dirname(os.path.abspath(__file__)),
    ):
        del sys.path[
            0
        ]  # this script's folder (labs/hub: `import plan` must not find its plan.py); the cwd comes
        # back with the kernel's own path set-up, as with ipykernel_launcher
    pipe_on_unix_socket()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
