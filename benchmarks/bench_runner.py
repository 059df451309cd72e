"""Per-notebook overhead of `labs run` vs the papermill command line, same notebooks, one run.

Makes N notebooks of one `import torch` cell plus a few trivial cells, then times
  1. the papermill CLI, one process per notebook, one after another (what a user scripts);
  2. the papermill CLI, two at a time (`xargs -P 2`), for a fair parallel baseline;
  3. `labs run --jobs 2`.
Usage: python benchmarks/bench_runner.py [--notebooks 20] [--out build/bench_runner]
"""

from __future__ import annotations

import argparse
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
        nb = nbf.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                          "language": "python"}})
        nb.cells = [nbf.v4.new_code_cell('DEVICE = "auto"\nSMOKE = False', metadata={"tags": ["parameters"]}),
                    nbf.v4.new_code_cell("import torch"),
                    nbf.v4.new_code_cell(f"x = torch.arange({i + 3})"),
                    nbf.v4.new_code_cell("y = x * 2"),
                    nbf.v4.new_code_cell("assert int(y.sum()) == 2 * int(x.sum())")]
        path = folder / f"nb_{i:02d}.ipynb"
        nbf.write(nb, path)
        paths.append(path)
    return paths


def timed(command: list[str] | str, shell: bool = False) -> float:
    start = time.perf_counter()
    subprocess.run(command, shell=shell, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notebooks", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("build/bench_runner"))
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    notebooks = make_notebooks(args.out / "src", args.notebooks)
    outputs = args.out / "papermill"
    outputs.mkdir(parents=True)
    papermill = str(BIN / "papermill")
    sequential = sum(timed([papermill, str(nb), str(outputs / nb.name), "-k", "python3", "-p", "SMOKE", "True",
                            "--no-progress-bar"]) for nb in notebooks)
    parallel = timed(f"ls {args.out / 'src'}/*.ipynb | xargs -P 2 -I{{}} sh -c "
                     f"'{papermill} {{}} {outputs}/$(basename {{}}) -k python3 -p SMOKE True --no-progress-bar'",
                     shell=True)
    labs = timed([str(BIN / "labs"), "run", str(args.out / "src"), "--jobs", "2", "--smoke", "--device", "cpu",
                  "--report", str(args.out / "labs")])
    n = len(notebooks)
    print("| tool | total (s) | per notebook (s) |\n|---|---|---|")
    print(f"| papermill CLI, sequential | {sequential:.1f} | {sequential / n:.2f} |")
    print(f"| papermill CLI, 2 at a time (xargs -P 2) | {parallel:.1f} | {parallel / n:.2f} |")
    print(f"| labs run --jobs 2 | {labs:.1f} | {labs / n:.2f} |")
    print(f"\nspeed-up of labs run: {sequential / labs:.1f}x vs sequential papermill, "
          f"{parallel / labs:.1f}x vs 2-way papermill ({n} notebooks)")


if __name__ == "__main__":
    main()
