"""Start-up cost of a 2-rank gloo job: labutils.launch vs the tools a user would otherwise reach for.

Every job does the same work: init a gloo process group on 2 local ranks, all-reduce a tensor,
check the sum, barrier, destroy. Wall time from the call to the results being back.

    python benchmarks/bench_launch.py [--repeats 3] [--out FILE]   (figures: docs/benchmarks/distributed.md)
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from labutils.launch import launch, run_cell

SCRIPT = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
x = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(x)
assert x.item() == 3.0, x
dist.barrier()
dist.destroy_process_group()
"""


def all_reduce_job() -> float:
    """The work every launcher runs (inside an initialised group)."""
    x = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(x)
    return x.item()


def _spawn_target(rank: int, world: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    assert all_reduce_job() == 3.0
    dist.barrier()
    dist.destroy_process_group()


def free_port() -> int:
    """A port that was free a moment ago (what mp.spawn users typically do; racy by nature)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def with_launch(warm: bool) -> Callable[[], None]:
    def run() -> None:
        assert launch(all_reduce_job, 2, timeout=300, warm=warm) == [3.0, 3.0]

    return run


def with_spawn() -> None:
    mp.spawn(_spawn_target, args=(2, free_port()), nprocs=2, join=True)


def with_torchrun_cli() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "job.py"
        script.write_text(SCRIPT)
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc-per-node=2",
                str(script),
            ],
            check=True,
            env=env,
            capture_output=True,
        )


def with_magic() -> None:
    run_cell(SCRIPT.replace('"gloo"', "BACKEND"), 2, timeout=300)


def timed(fn: Callable[[], None], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    first_warm = timed(with_launch(True), 1)[0]  # includes starting the zygote (import torch once)
    rows = [
        ("`launch(fn, 2)` (warm: forked by the zygote)", timed(with_launch(True), args.repeats)),
        ("`launch(fn, 2, warm=False)` (fresh interpreters)", timed(with_launch(False), args.repeats)),
        ("`torch.multiprocessing.spawn` (fresh interpreters)", timed(with_spawn, args.repeats)),
        ("`torchrun --standalone` CLI on a script", timed(with_torchrun_cli, args.repeats)),
        ("`%%torchrun -n 2` (`run_cell`, torchrun underneath)", timed(with_magic, args.repeats)),
    ]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "| launcher | median (s) | min (s) | max (s) |",
        "|---|---:|---:|---:|",
        f"| `launch(fn, 2)`, first call of the process (starts the zygote) | {first_warm:.2f} | - | - |",
    ]
    lines += [f"| {name} | {statistics.median(t):.2f} | {min(t):.2f} | {max(t):.2f} |" for name, t in rows]
    text = "\n".join(lines) + f"\n\nrepeats: {args.repeats}; load average after the run: {load}\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
