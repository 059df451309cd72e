"""What the grader's in-process safety layers cost per submission: contracts, rule windows, vetting.

A sandboxed job runs the notebook's cells, then the lab's probes. Two layers run *inside* the probes: every
call of a notebook function goes through :mod:`graders.inside.contracts` (which arguments and which global state
it changed), and the probes that state a rule open :func:`graders.inside.rules.forbidden` windows (a dispatch mode
and a profile hook on every Python call). A third, :mod:`graders.grader.vetting`, reads the solution cells in the
trusted grader before anything runs. This script times the probes of one correct submission per lab, in
this process (warm, unsandboxed: what the layers cost, not the sandbox), with each layer on and off:

  all layers | contracts off | rule windows off | both off

and vetting (restoring the submission into the source with and without reading its solution cells).
The figures are medians over ``--repeat`` salts, after one warm-up pass that pays first-call costs.
Usage: python benchmarks/bench_safety.py [--chapters 01_autograd 02_tensors 03_modules] [--repeat 7]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import nbformat

import graders.grader.parsing
import graders.grader.vetting
import graders.inside.rules
from graders.grader.cells import restore
from graders.grader.grading import job_for, load_lab
from graders.inside.job import execute_cells
from graders.inside.probing import Probe, load_probes, run_probe
from graders.inside.rules import Seen

VARIANTS = ("all layers", "contracts off", "rule windows off", "both off")


@contextlib.contextmanager
def _open_window(*_: object, **__: object) -> Iterator[Seen]:
    """A rule window that records nothing and installs no hook or mode (the layer switched off)."""
    yield Seen()


def probes_for(job_source: str, job_file: str, variant: str) -> dict[str, Probe]:
    """The lab's probes as ``variant`` runs them (probe files bind ``forbidden`` when they are loaded)."""
    real = graders.inside.rules.forbidden
    if variant in ("rule windows off", "both off"):
        graders.inside.rules.forbidden = _open_window
    try:
        probes = load_probes(job_source, job_file)
    finally:
        graders.inside.rules.forbidden = real
    if variant in ("contracts off", "both off"):
        probes = {g: replace(p, contracts=False) for g, p in probes.items()}
    return probes


def probe_seconds(probes: dict[str, Probe], ns: dict, salt: int) -> float:
    """Wall seconds of one pass of every probe on the notebook's namespace."""
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        for probe in probes.values():
            run_probe(probe, ns, salt)
    return time.perf_counter() - start


def _forget_vetting() -> None:
    """Empty the caches a new submission misses (its cells' trees and what was read from them), as in a batch:
    what the grader knows of the lab and of the modules (the policy, resolved paths) stays, as it stays over
    a class's submissions."""
    graders.grader.parsing._read_within_bounds.cache_clear()
    graders.grader.vetting._mentioned_cached.cache_clear()


def vetting_seconds(lab_source: nbformat.NotebookNode, repeat: int) -> tuple[float, float]:
    """Median seconds to restore a submission into the source, with and without vetting its solution cells
    (caches emptied before each)."""
    timed = {}
    for vetted in (True, False):
        runs = []
        for _ in range(repeat):
            _forget_vetting()
            start = time.perf_counter()
            restore(lab_source, lab_source, vetted=vetted)
            runs.append(time.perf_counter() - start)
        timed[vetted] = statistics.median(runs)
    return timed[True], timed[False]


def one_lab(chapter: str, repeat: int) -> str:
    """The table row of ``chapter``'s lab (run in a process of its own: a lab's cells change global state)."""
    path = next(Path("course", chapter).glob("lab_*.ipynb")).resolve()
    lab = load_lab(path)
    job = job_for(lab, restore(lab.source, lab.source, vetted=True), 0)
    with contextlib.redirect_stdout(io.StringIO()):
        _, ns = execute_cells(job.cells)
    medians = []
    for variant in VARIANTS:
        probes = probes_for(job.probes_source, job.probes_file, variant)
        probe_seconds(probes, ns, salt=-1)  # first calls
        medians.append(statistics.median(probe_seconds(probes, ns, salt) for salt in range(repeat)))
    with_vetting, without = vetting_seconds(lab.source, repeat)
    cells = " | ".join(f"{m:.3f} s" for m in medians)
    return f"| {chapter}/{path.name} | {cells} | {with_vetting * 1e3:.0f} / {without * 1e3:.0f} ms |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chapters", nargs="+", default=["01_autograd", "02_tensors", "03_modules"])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the row of one chapter, in this process
    args = parser.parse_args()
    if args.one:
        print(one_lab(args.one, args.repeat))
        return
    print(f"probe seconds per correct submission, median of {args.repeat} salts (warm, in-process)")
    print("| lab | " + " | ".join(VARIANTS) + " | vetting (restore with / without) |")
    print("|---" * (len(VARIANTS) + 2) + "|")
    for chapter in args.chapters:
        row = (
            subprocess.run(
                [sys.executable, __file__, "--one", chapter, "--repeat", str(args.repeat)],
                capture_output=True,
                text=True,
                check=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        print(row)


if __name__ == "__main__":
    main()
