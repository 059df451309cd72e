"""What runs inside each rank started by :mod:`labutils.launch` (``python -m labutils.launch.worker``).

Two modes:

* ``cell SPEC``: under torchrun (``%%torchrun``), run the cell file as ``__main__`` with the
  header globals (``BACKEND``, ``DEVICE`` and the ``--vars`` values). The cell manages its own
  process group, exactly like a script started by torchrun.
* ``function SPEC RANK``: under :func:`labutils.launch.launch`, join the process group through
  the parent's TCP store, call the function, save its return value, meet at a barrier and
  destroy the process group.

In cell mode, a process group the cell left initialised is closed by the runner (barrier, then
``destroy_process_group``). Then, in both modes, the rank runs its ``atexit`` handlers, flushes its
output and ends with ``os._exit(0)``: no C++ static destructors run, so a rank whose work succeeded
cannot abort at teardown with "terminate called without an active exception" (a thread of the
distributed stack still joinable; seen once in chapter 04's FSDP checkpoint cell on a loaded
machine). Files the cell or function opened should be closed by it (use ``with``).

A failure writes ``errors/rank<k>.json`` (the traceback, trimmed to the user's frames) and exits
with status 1 at once (``os._exit``: no C++ destructors run, so a failing rank cannot abort with
"terminate called without an active exception"). A watchdog thread ends the rank if the process
that started it dies, so a killed kernel or torchrun never leaves a rank behind.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import json
import os
import runpy
import sys
import threading
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

from labutils.launch.procs import KERNEL_PID_ENV
from labutils.launch.ship import Target
from labutils.launch.specs import CellSpec, FunctionSpec, read_spec
from zygote.client import pid_alive

_SKIP_FILES = {__file__, runpy.__file__}


def start_watchdog(interval: float = 1.0) -> None:
    """End this process if its parent or the notebook kernel that started the run disappears."""
    parent = os.getppid()
    kernel = int(os.environ.get(KERNEL_PID_ENV, "0"))

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent or (kernel and not pid_alive(kernel)):
                os._exit(1)

    threading.Thread(target=watch, name="labutils-watchdog", daemon=True).start()


def user_traceback(exc: BaseException, first_file: str | None = None) -> str:
    """The traceback of ``exc`` without the launcher's own frames."""
    tb = exc.__traceback__
    if first_file is not None:
        probe = tb
        while probe is not None and probe.tb_frame.f_code.co_filename != first_file:
            probe = probe.tb_next
        tb = probe or tb
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename in _SKIP_FILES:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def report_failure(error_dir: Path, rank: int, text: str) -> None:
    """Write this rank's failure report for the parent, then exit 1 without running destructors."""
    error_dir.mkdir(parents=True, exist_ok=True)
    tmp = error_dir / f".rank{rank}.json.tmp"
    tmp.write_text(json.dumps({"rank": rank, "time": time.time(), "traceback": text}))
    tmp.rename(error_dir / f"rank{rank}.json")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


def end_without_teardown() -> None:
    """The rank's work is done and its group destroyed: run the ``atexit`` handlers, flush, and exit 0
    without the interpreter's teardown (see the module doc; it also saves about a second per rank)."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_cell(spec: CellSpec) -> None:
    """Run the cell file as ``__main__`` (torchrun has set RANK, WORLD_SIZE, MASTER_* ...)."""
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    header = dict(spec.variables)
    header["BACKEND"] = spec.backend
    header["DEVICE"] = f"cuda:{local_rank}" if spec.backend == "nccl" else "cpu"
    runpy.run_path(spec.cell, init_globals=header, run_name="__main__")
    import torch.distributed as dist

    if dist.is_initialized():  # the cell left its group open: meet, then release it (see module doc)
        dist.barrier()
        dist.destroy_process_group()


def load_function(target: Target) -> Any:
    """Import the function a :class:`labutils.launch.ship.Target` describes."""
    if target.path:
        module_spec = importlib.util.spec_from_file_location(target.module, target.path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot load {target.module} from {target.path}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[target.module] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target.module)
    found: Any = module
    for part in target.qualname.split("."):
        found = getattr(found, part)
    return found


def _to_cpu(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: _to_cpu(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to_cpu(item) for item in value)
    return value


def run_function(spec: FunctionSpec, rank: int) -> None:
    """Join the process group, call the function, save its result, shut down cleanly."""
    import torch
    import torch.distributed as dist

    world_size = spec.world_size
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(world_size),
        MASTER_ADDR=spec.host,
        MASTER_PORT=str(spec.port),
    )
    fn = load_function(spec.target)
    args = torch.load(spec.args, weights_only=True)
    timeout = timedelta(seconds=spec.pg_timeout)
    store = dist.TCPStore(spec.host, spec.port, None, False, timeout=timeout)
    if spec.backend == "nccl":
        torch.cuda.set_device(rank)
    dist.init_process_group(spec.backend, store=store, rank=rank, world_size=world_size, timeout=timeout)
    result = fn(*args)
    torch.save(_to_cpu(result), Path(spec.results) / f"rank{rank}.pt")
    if dist.is_initialized():
        dist.barrier(device_ids=[rank] if spec.backend == "nccl" else None)
        dist.destroy_process_group()


def main(argv: list[str]) -> None:
    """Entry point: ``cell SPEC`` or ``function SPEC RANK`` (the spec says which: :mod:`labutils.launch.specs`)."""
    spec = read_spec(Path(argv[1]))
    start_watchdog()
    sys.path[:0] = [entry for entry in spec.sys_path if entry not in sys.path]
    rank = int(argv[2]) if isinstance(spec, FunctionSpec) else int(os.environ.get("RANK", "0"))
    try:
        if isinstance(spec, CellSpec):
            run_cell(spec)
        else:
            run_function(spec, rank)
        end_without_teardown()
    except SystemExit as exc:
        if exc.code not in (None, 0):
            report_failure(Path(spec.errors), rank, f"SystemExit: {exc.code}\n")
        raise
    except BaseException as exc:  # noqa: BLE001 (every failure goes back to the parent)
        first_file = spec.cell if isinstance(spec, CellSpec) else None
        report_failure(Path(spec.errors), rank, user_traceback(exc, first_file))


if __name__ == "__main__":
    main(sys.argv[1:])
