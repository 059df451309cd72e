"""A class at once: N students sign in to one `labs hub`, run a lesson's first cells and submit, all together.

    sudo .venv/bin/python benchmarks/bench_hub_load.py --students 20 [--cells 5] [--json build/hub_load.json]

As root (it makes a unix user per student): starts a real class (tests/browser/hub.py's ``hub_server``: a class
list of an instructor and N students, NativeAuthenticator, per-student cgroups, on 127.0.0.1), the instructor
releases chapter 01 to the exchange, then every student at once, each an asyncio task speaking HTTP and the
kernel websocket as their browser would (labs.hub.client): signs in with their one-time password, waits for their
server, starts a kernel, fetches the chapter in the Assignments tab, runs the first ``--cells`` code cells of lesson
01_autograd/1_graphs (on CPU) and submits. Then the instructor runs `labs collect`. Prints, and writes as JSON:
students whose cells all finished, submissions collected, sign-in-to-kernel-ready and per-cell latency
(p50/p95/max), wall time and the CPU time of the whole class (every student's cgroup, and the hub's processes), and the
markdown row of docs/benchmarks.md. Everything it made is removed afterwards, also on failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
import psutil

CHECKOUT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(CHECKOUT))

from labs.hub.client import HubSession  # noqa: E402
from labs.hub.limits import class_folders  # noqa: E402
from tests.browser.hub import RunningHub, hub_server, run_as  # noqa: E402

CHAPTER = "01_autograd"
LESSON = CHECKOUT / "course" / CHAPTER / "1_graphs.ipynb"


@dataclass
class Student:
    """What one student's session measured."""

    name: str
    ready_s: float = 0.0  # from the sign-in form's POST to the kernel's kernel_info reply
    cells_s: list[float] = field(default_factory=list)
    fetched: bool = False
    submitted: bool = False
    error: str = ""

    @property
    def finished(self) -> bool:
        return not self.error and self.submitted


def first_cells(count: int) -> list[str]:
    """The first ``count`` code cells of the lesson, its parameters set for CPU."""
    notebook = nbformat.read(LESSON, as_version=4)
    cells = [c.source for c in notebook.cells if c.cell_type == "code"][:count]
    return [source.replace('DEVICE = "auto"', 'DEVICE = "cpu"') for source in cells]


async def one_student(hub: RunningHub, name: str, cells: list[str], start: asyncio.Event) -> Student:
    result = Student(name)
    await start.wait()
    session = HubSession(hub.base, name, hub.passwords[name])
    try:
        began = time.monotonic()
        if not await session.sign_in():
            raise RuntimeError("sign-in refused")
        if session.must_choose_password:  # a first sign-in: the one-time password only opens this form
            await session.choose_password()
        await session.start_server(timeout=900)
        kernel = await session.start_kernel()
        result.ready_s = time.monotonic() - began
        result.fetched = (await session.assignment("fetch", CHAPTER))["success"]
        for source in cells:
            cell = await kernel.execute(source, timeout=900)
            if cell.status != "ok":
                raise RuntimeError(f"cell {len(result.cells_s) + 1}: {cell.status} {cell.error}")
            result.cells_s.append(cell.seconds)
        result.submitted = (await session.assignment("submit", CHAPTER))["success"]
        await kernel.close()
    except Exception as err:  # noqa: BLE001 - one student's failure is reported with the others', not raised
        result.error = f"{type(err).__name__}: {err}"
    finally:
        await session.close()
    return result


async def whole_class(hub: RunningHub, names: list[str], cells: list[str]) -> list[Student]:
    start = asyncio.Event()
    tasks = [asyncio.create_task(one_student(hub, name, cells, start)) for name in names]
    start.set()
    return list(await asyncio.gather(*tasks))


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, by linear interpolation; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def class_cpu_seconds(hub: RunningHub) -> float:
    """CPU seconds so far of every student's cgroup (their server, kernels and all they started, including
    processes already gone) and of the hub's own process tree (hub, proxy, culler)."""
    total = 0.0
    for folder in class_folders(hub.class_name):
        for student in (p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else ():
            usage, stat = student / "cpuacct.usage", student / "cpu.stat"
            if usage.exists():  # v1's cpuacct
                total += int(usage.read_text()) / 1e9
            elif stat.exists():  # v2 (v1's cpu.stat has no usage_usec)
                fields = dict(line.split() for line in stat.read_text().splitlines())
                total += int(fields.get("usage_usec", 0)) / 1e6
    for process in hub.processes():
        try:
            if process.uids().real != 0:
                continue  # a student's server: counted in their cgroup
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def hub_log_about(hub: RunningHub, names: list[str], lines: int = 80) -> list[str]:
    """The hub's last log lines that name one of ``names`` (a student whose server or cells failed)."""
    log = hub.root / "jupyterhub.log"
    text = log.read_text(errors="replace").splitlines() if log.exists() else []
    return [line for line in text if any(name in line for name in names)][-lines:]


def run(students: int, cell_count: int, scratch: Path) -> dict:
    """Start the class, run the load, collect; the figures as a dict."""
    names = [f"s{i:02d}" for i in range(1, students + 1)]
    cells = first_cells(cell_count)
    with hub_server(scratch, people=("teacher", *names), options=("--cull-idle", "0")) as hub:
        python = str(Path(sys.executable).parent / "labs")
        out = run_as(
            "teacher",
            [
                python,
                "release",
                CHAPTER,
                "--exchange",
                "--exchange-root",
                str(hub.exchange),
                "--root",
                str(hub.grading),
                "--workspace",
                str(hub.home("teacher") / "student"),
                "--course",
                str(hub.course),
            ],
        )
        if out.returncode != 0:
            raise RuntimeError(f"labs release: {out.stdout}{out.stderr}")
        cpu_before = class_cpu_seconds(hub)
        began = time.monotonic()
        results = asyncio.run(whole_class(hub, names, cells))
        wall = time.monotonic() - began
        cpu = class_cpu_seconds(hub) - cpu_before
        out = run_as(
            "teacher",
            [
                python,
                "collect",
                CHAPTER,
                "--root",
                str(hub.grading),
                "--exchange-root",
                str(hub.exchange),
                "--course",
                str(hub.course),
            ],
        )
        collected = sorted(p.parent.name for p in (hub.grading / "submitted").glob(f"*/{CHAPTER}"))
        failed = [r.name for r in results if r.error]
        hub_says = hub_log_about(hub, failed) if failed else []  # the class is removed when the block ends
    ready = [r.ready_s for r in results if not r.error]
    latency = [s for r in results for s in r.cells_s]
    return {
        "students": students,
        "cells": len(cells),
        "finished": sum(r.finished for r in results),
        "collected": len(collected),
        "collect_output": (out.stdout + out.stderr)[-2000:],
        "ready_p50_s": percentile(ready, 0.5),
        "ready_p95_s": percentile(ready, 0.95),
        "ready_max_s": max(ready, default=0.0),
        "cell_p50_s": percentile(latency, 0.5),
        "cell_p95_s": percentile(latency, 0.95),
        "cell_max_s": max(latency, default=0.0),
        "wall_s": wall,
        "class_cpu_s": cpu,
        "errors": {r.name: r.error for r in results if r.error},
        "hub_log_of_the_failed": hub_says,
        "per_student": [asdict(r) for r in results],
        "machine": f"{platform.node()}: {os.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, load {os.getloadavg()[0]:.1f} at the end",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def markdown_row(figures: dict) -> str:
    """The row of docs/benchmarks.md's summary table."""
    return (
        f"| a class at once on `labs hub`: {figures['students']} students sign in, start a kernel, fetch "
        f"{CHAPTER}, run lesson 1_graphs' first {figures['cells']} cells and submit (REST + kernel websockets, "
        f"127.0.0.1; `sudo .venv/bin/python benchmarks/bench_hub_load.py --students {figures['students']}`) | "
        f"all finish, all collected | {figures['finished']}/{figures['students']} finished, "
        f"{figures['collected']} collected; sign-in to kernel ready p50 {figures['ready_p50_s']:.1f} s, "
        f"p95 {figures['ready_p95_s']:.1f} s; cell latency p50 {figures['cell_p50_s']:.2f} s, "
        f"p95 {figures['cell_p95_s']:.2f} s; {figures['wall_s']:.0f} s wall, {figures['class_cpu_s']:.0f} CPU-s; "
        f"{figures['machine']}, {figures['date']} | "
        f"{'yes' if figures['finished'] == figures['collected'] == figures['students'] else 'no'} |"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every student finished and every submission was collected."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument(
        "--cells", type=int, default=5, help="the lesson's first code cells each student runs"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-hub-load-") as scratch:
        figures = run(args.students, args.cells, Path(scratch))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))
    summary = {k: v for k, v in figures.items() if k not in ("per_student", "collect_output")}
    print(json.dumps(summary, indent=2))
    print(markdown_row(figures))
    return 0 if figures["finished"] == figures["collected"] == args.students else 1


if __name__ == "__main__":
    sys.exit(main())
