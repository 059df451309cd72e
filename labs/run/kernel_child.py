"""What a kernel forked from ``labs run``'s zygote runs: ipykernel, as its launcher would.

A cold kernel costs a new interpreter, ipykernel's imports and ``import torch`` (2-3 s of CPU). The
zygote (:mod:`zygote.server`, started by :mod:`labs.run.forked` with the kernels' own environment,
so whatever torch, numpy and OpenMP read at import is what a cold kernel would read) pays that once
per ``labs run``: it imports :data:`PRELOAD`, never runs torch code, and each kernel is then a fork
that :func:`zygote.child.become` sets up (own session, stdio, environment, folder, random state)
before :func:`start_ipykernel` runs ``python -m ipykernel_launcher -f CONNECTION_FILE``'s work. It is
a fresh process all the same: nothing a notebook does reaches the zygote or another kernel. Kernels
exit through ipykernel's parent poller when the zygote does (``JPY_PARENT_PID``).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys

# What a kernel imports before running the first cell: the prelude's torch and labutils, and what
# ipykernel loads while starting (its debugger's debugpy is half of that). Not matplotlib: it reads
# MPLBACKEND at import, which ipykernel sets only in the kernel.
PRELOAD = (
    "torch",
    "labutils",
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "ipykernel.debugger",
    "IPython.core.completer",
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "IPython.core.oinspect",
    "IPython.extensions.storemagic",
    "tornado.platform.asyncio",
    "tornado.queues",
    "tornado.locks",
    "sqlite3",
    "jupyter_client.session",
)
TARGET = "labs.run.kernel_child:start_ipykernel"


def _console_handlers() -> list[logging.StreamHandler]:
    """Log handlers the preloaded modules made on the interpreter's own stdout/stderr (torch makes dozens).

    A cold kernel creates them after ipykernel has replaced sys.stdout/sys.stderr, so they must move
    to the kernel's streams once it has them.
    """
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    return [
        handler
        for logger in loggers
        for handler in getattr(logger, "handlers", ())
        if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.__stdout__, sys.__stderr__)
    ]


def start_ipykernel(argv: list[str]) -> None:
    """What ``python -m ipykernel_launcher ARGV`` does once its imports are done.

    IPKernelApp read JPY_PARENT_PID and JPY_INTERRUPT_EVENT when the zygote imported it, so they are
    passed explicitly; the parent to watch is the zygote.
    """
    os.environ["JPY_PARENT_PID"] = str(os.getppid())
    handlers = _console_handlers()
    spec = importlib.util.find_spec("ipykernel_launcher")
    sys.argv = [spec.origin if spec and spec.origin else "ipykernel_launcher", *argv]
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance(
        parent_handle=os.getppid(), interrupt=int(os.environ.get("JPY_INTERRUPT_EVENT") or 0)
    )
    app.initialize()
    for handler in handlers:  # log records go to the notebook, as in a cold kernel
        handler.setStream(sys.stderr if handler.stream is sys.__stderr__ else sys.stdout)
    app.start()
