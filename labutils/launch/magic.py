"""The ``%%torchrun`` cell magic (registered by ``%load_ext labutils``).

::

    %%torchrun -n 2 --timeout 120 --device {DEVICE} --vars SMOKE STEPS
    import torch.distributed as dist
    dist.init_process_group(BACKEND)
    ...
    dist.barrier()
    dist.destroy_process_group()

The cell runs as its own program on every rank and cannot see notebook variables: name the
simple ones it needs with ``--vars``. IPython expands ``{expr}`` in the magic line, so
``--device {DEVICE}`` passes the notebook's device. ``--cuda-only WHAT`` skips the cell visibly
unless there is one CUDA device per rank.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from labutils.launch.launcher import run_cell, warm_up
from labutils.notebook import gpu_count, resolve_device


def cuda_ranks_available(device: str, nproc: int) -> bool:
    """True when ``device`` resolves to CUDA and there is one GPU per rank."""
    return resolve_device(device) == "cuda" and gpu_count() >= nproc


@magics_class
class TorchrunMagics(Magics):
    """``%%torchrun``: run the cell under torchrun on N local ranks."""

    @magic_arguments()
    @argument("-n", "--nproc-per-node", dest="nproc", type=int, default=2, help="number of ranks (default 2)")
    @argument(
        "--timeout", type=float, default=300.0, help="seconds before every rank is killed (default 300)"
    )
    @argument(
        "--backend",
        default="auto",
        choices=["auto", "gloo", "nccl"],
        help="process group backend; auto: nccl with one GPU per rank, else gloo",
    )
    @argument("--device", default="auto", help="auto, cpu or cuda (e.g. --device {DEVICE})")
    @argument(
        "--vars",
        nargs="*",
        default=[],
        metavar="NAME",
        help="notebook variables (simple values) to define in the script",
    )
    @argument(
        "--cuda-only",
        dest="cuda_only",
        default=None,
        metavar="WHAT",
        help="skip (visibly) unless there is one CUDA device per rank",
    )
    @cell_magic
    def torchrun(self, line: str, cell: str) -> None:
        """Run this cell as a script under torchrun on N local ranks; output is prefixed ``[rank k]``."""
        __tracebackhide__ = True
        args = parse_argstring(self.torchrun, line)
        if args.nproc < 1:
            raise UsageError(f"-n must be >= 1, got {args.nproc}")
        what = args.cuda_only.strip("'\"") if args.cuda_only is not None else None
        if what is not None and not cuda_ranks_available(args.device, args.nproc):
            print(
                f"SKIPPED on {resolve_device(args.device)}: {what} needs {args.nproc} CUDA "
                f"devices, one per rank ({gpu_count()} here); run with DEVICE='cuda' on a multi-GPU machine."
            )
            return
        if self.shell is None:
            raise UsageError("%%torchrun runs in an IPython shell")
        namespace = self.shell.user_ns
        missing = [name for name in args.vars if name not in namespace]
        if missing:
            raise UsageError(f"--vars names not defined in the notebook: {', '.join(missing)}")
        variables = {name: namespace[name] for name in args.vars}
        run_cell(
            cell,
            args.nproc,
            timeout=args.timeout,
            backend=args.backend,
            device=args.device,
            variables=variables,
        )


def register_magics(ipython: Any) -> None:
    """Register ``%%torchrun`` on an IPython shell (called by ``%load_ext labutils``)."""
    ipython.register_magics(TorchrunMagics)
    warm_up()
