"""Per-notebook overhead of `labs run` vs the papermill command line, same notebooks, one run.

Makes N notebooks of one `import torch` cell plus a few trivial cells, then times
  1. the papermill CLI, one process per notebook, one after another (what a user scripts);
  2. the papermill CLI, two at a time (`xargs -P 2`), for a fair parallel baseline;
  3. `labs run --jobs 2` (kernels forked from a zygote that imported torch once);
  4. `labs run --jobs 2` with `LABS_ZYGOTE=0` (every kernel a fresh interpreter, as before the zygote).
The 1-minute load average is printed after each, with the date and the machine: on a shared
machine the load says how much of it the benchmark had.
Usage: python benchmarks/bench_runner.py [--notebooks 20] [--out build/bench_runner]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat as nbf

BIN = Path(sys.executable).parent


def make_notebooks(folder: Path, count: int) -> list[Path]:
    """``count`` notebooks: parameters cell, `import torch`, three trivial cells."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        nb = nbf.v4.new_notebook(
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
        )
        nb.cells = [
            nbf.v4.new_code_cell('DEVICE = "auto"\nSMOKE = False', metadata={"tags": ["parameters"]}),
            nbf.v4.new_code_cell("import torch"),
            nbf.v4.new_code_cell(f"x = torch.arange({i + 3})"),
            nbf.v4.new_code_cell("y = x * 2"),
            nbf.v4.new_code_cell("assert int(y.sum()) == 2 * int(x.sum())"),
        ]
        path = folder / f"nb_{i:02d}.ipynb"
        nbf.write(nb, path)
        paths.append(path)
    return paths


def timed(command: list[str] | str, shell: bool = False, env: dict[str, str] | None = None) -> float:
    """Wall seconds of ``command``, which must succeed."""
    start = time.perf_counter()
    subprocess.run(
        command, shell=shell, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    return time.perf_counter() - start


def progress(label: str, seconds: float) -> float:
    """Print one measurement with the 1-minute load average at its end; return it."""
    print(f"{label}: {seconds:.1f} s, load average {os.getloadavg()[0]:.2f} at the end", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notebooks", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("build/bench_runner"))
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    notebooks = make_notebooks(args.out / "src", args.notebooks)
    print(
        f"{datetime.datetime.now():%Y-%m-%d %H:%M} on {platform.node()}: {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.2f} before",
        flush=True,
    )
    outputs = args.out / "papermill"
    outputs.mkdir(parents=True)
    papermill = str(BIN / "papermill")
    sequential = progress(
        "papermill, sequential",
        sum(
            timed(
                [
                    papermill,
                    str(nb),
                    str(outputs / nb.name),
                    "-k",
                    "python3",
                    "-p",
                    "SMOKE",
                    "True",
                    "--no-progress-bar",
                ]
            )
            for nb in notebooks
        ),
    )
    parallel = progress(
        "papermill, 2 at a time",
        timed(
            f"ls {args.out / 'src'}/*.ipynb | xargs -P 2 -I{{}} sh -c "
            f"'{papermill} {{}} {outputs}/$(basename {{}}) -k python3 -p SMOKE True --no-progress-bar'",
            shell=True,
        ),
    )
    labs_run = [
        str(BIN / "labs"),
        "run",
        str(args.out / "src"),
        "--jobs",
        "2",
        "--smoke",
        "--device",
        "cpu",
        "--report",
    ]
    labs = progress("labs run", timed([*labs_run, str(args.out / "labs")]))
    cold = progress(
        "labs run, cold kernels",
        timed([*labs_run, str(args.out / "labs_cold")], env={**os.environ, "LABS_ZYGOTE": "0"}),
    )
    n = len(notebooks)
    print("| tool | total (s) | per notebook (s) |\n|---|---|---|")
    print(f"| papermill CLI, sequential | {sequential:.1f} | {sequential / n:.2f} |")
    print(f"| papermill CLI, 2 at a time (xargs -P 2) | {parallel:.1f} | {parallel / n:.2f} |")
    print(f"| labs run --jobs 2 | {labs:.1f} | {labs / n:.2f} |")
    print(f"| labs run --jobs 2, cold kernels (LABS_ZYGOTE=0) | {cold:.1f} | {cold / n:.2f} |")
    print(
        f"\nspeed-up of labs run: {sequential / labs:.1f}x vs sequential papermill, "
        f"{parallel / labs:.1f}x vs 2-way papermill, {cold / labs:.1f}x vs cold kernels ({n} notebooks)"
    )


if __name__ == "__main__":
    main()
