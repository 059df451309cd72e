"""Run a function or a cell on N local ranks, each a real process in a default process group.

- :func:`launch` calls a function on every rank and returns the per-rank results;
- :func:`run_cell` runs a cell's source under ``torchrun`` (the ``%%torchrun`` magic of
  :mod:`labutils.launch.magic`);
- :func:`warm_up` starts the rank factory (:mod:`labutils.launch.zygote`) ahead of the first launch.

Inside: :mod:`~labutils.launch.ship` (how a function travels to the ranks), :mod:`~labutils.launch.worker`
(what each rank runs), :mod:`~labutils.launch.procs` (live output, stopping a whole run).
"""

from labutils.launch.launcher import choose_backend, launch, run_cell, warm_up
from labutils.launch.procs import LaunchError, LaunchTimeoutError, RankFailedError
from labutils.launch.ship import ShipError

__all__ = [
    "LaunchError",
    "LaunchTimeoutError",
    "RankFailedError",
    "ShipError",
    "choose_backend",
    "launch",
    "run_cell",
    "warm_up",
]
