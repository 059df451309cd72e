"""Grading throughput: stock `nbgrader autograde` against `labs grade` (sandbox on), same submissions.

Builds 20 submissions of a real lab (default 02_tensors): correct ones, partly wrong ones (the
chapter's wrong solutions swapped in), blank releases (every exercise raises) and crashing ones,
then times, in one run, ``--rounds`` times each (the first of the two alternating, medians compared):
  1. `nbgrader autograde CHAPTER` on an nbgrader course holding them (one submission at a time,
     tests in the student's kernel: no sandbox);
  2. `labs grade --jobs 2` on the same folder (bubblewrap sandbox, probes, trusted comparison).
It also reports the per-submission overhead of `labs grade` beyond the student's own code: the
sandbox job's wall time minus the time the same cells take in a warm, unsandboxed IPython shell.
Usage: python benchmarks/bench_grade.py [--chapter 02_tensors] [--rounds 3] [--out build/bench_grade]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from graders.check.selfcheck import with_solution_replaced
from graders.coursedir import solution_files
from graders.grader.cells import blank_version, restore
from graders.inside.job import execute_cells
from graders.paths import ensure_tools_on_path

BIN = Path(sys.executable).parent


def submissions(lab: Path, wrong_dir: Path, count: int) -> dict[str, nbformat.NotebookNode]:
    """``count`` notebooks: 40% correct, 30% partly wrong, 20% blank, 10% crashing."""
    source = nbformat.read(lab, as_version=4)
    wrong = solution_files(wrong_dir, lab.parent.name)
    crash = nbformat.from_dict(json.loads(json.dumps(source)))
    # the first solution cell reads far outside an array (no import the grader's vetting refuses): the
    # kernel dies of SIGSEGV, nothing after this runs
    next(
        c for c in crash.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
    ).source += (
        "\nimport numpy\nnumpy.lib.stride_tricks.as_strided(numpy.zeros(1), (1 << 20,), (1 << 30,)).sum()"
    )
    kinds = ["correct"] * 4 + ["wrong"] * 3 + ["blank"] * 2 + ["crash"]
    made = {}
    for i in range(count):
        kind = kinds[i % len(kinds)]
        if kind == "correct":
            nb = source
        elif kind == "wrong":
            grade_id, path = wrong[i % len(wrong)]
            nb = with_solution_replaced(source, grade_id, path.read_text(encoding="utf-8"))
        elif kind == "blank":
            nb = blank_version(source)
        else:
            nb = crash
        made[f"s{i:02d}-{kind}"] = nb
    return made


def nbgrader_course(root: Path, chapter: str, lab: Path, subs: dict[str, nbformat.NotebookNode]) -> None:
    """An nbgrader course with the lab released and every submission in submitted/."""
    (root / "source" / chapter).mkdir(parents=True)
    shutil.copy2(lab, root / "source" / chapter / lab.name)
    (root / "nbgrader_config.py").write_text(
        f"c.CourseDirectory.root = {str(root)!r}\nc.CourseDirectory.course_id = 'bench'\n"
        "c.ExecutePreprocessor.timeout = 300\n"
    )
    run([str(BIN / "nbgrader"), "generate_assignment", chapter, "--force"], root)
    for student, nb in subs.items():
        folder = root / "submitted" / student / chapter
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / lab.name)


def run(command: list[str], cwd: Path) -> float:
    """Wall seconds of ``command`` (its output discarded; failures are part of grading)."""
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def own_code_seconds(lab: Path, nb: nbformat.NotebookNode) -> float:
    """Seconds the submission's restored cells take in this (warm, unsandboxed) process."""
    cells = restore(nbformat.read(lab, as_version=4), nb).cells
    execute_cells(cells)  # first run: imports and first-call costs, which the sandbox's zygote pays once
    start = time.perf_counter()
    execute_cells(cells)
    return time.perf_counter() - start


def one_round(out: Path, chapter: str, labs_first: bool) -> tuple[float, float]:
    """Seconds of ``nbgrader autograde`` and of ``labs grade`` on the same submissions (in either order)."""
    shutil.rmtree(out / "labs", ignore_errors=True)
    tools = {
        "nbgrader": lambda: run([str(BIN / "nbgrader"), "autograde", chapter, "--force"], out / "nbgrader"),
        "labs": lambda: run(
            [
                str(BIN / "labs"),
                "grade",
                str(out / "nbgrader" / "submitted"),
                "--chapter",
                chapter,
                "--root",
                str(out / "labs"),
                "--jobs",
                "2",
            ],
            Path.cwd(),
        ),
    }
    seconds = {name: tools[name]() for name in (("labs", "nbgrader") if labs_first else ("nbgrader", "labs"))}
    return seconds["nbgrader"], seconds["labs"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chapter", default="02_tensors")
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs of each tool, alternating which goes first"
    )
    parser.add_argument("--out", type=Path, default=Path("build/bench_grade"))
    args = parser.parse_args()
    ensure_tools_on_path()
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    lab = next(Path("course", args.chapter).glob("lab_*.ipynb")).resolve()
    subs = submissions(lab, Path("tests/wrong_solutions"), args.count)
    nbgrader_course(out / "nbgrader", args.chapter, lab, subs)
    load_before = os.getloadavg()
    rounds = [one_round(out, args.chapter, labs_first=k % 2 == 1) for k in range(args.rounds)]
    stock, ours = statistics.median(r[0] for r in rounds), statistics.median(r[1] for r in rounds)
    results = json.loads((out / "labs" / "reports" / "results.json").read_text())
    job_seconds = {g["student"]: g["seconds"] for g in results["grades"]}
    correct = [s for s in subs if s.endswith("correct")][0]
    own = own_code_seconds(lab, subs[correct])
    print(f"machine: {os.cpu_count()} cores; load average before: {load_before}, after: {os.getloadavg()}")
    print(
        f"{args.count} submissions of {args.chapter}/{lab.name}; {args.rounds} rounds, each tool once a round, "
        "the first alternating"
    )
    print("rounds (nbgrader s, labs s): " + ", ".join(f"({a:.1f}, {b:.1f})" for a, b in rounds))
    print(
        f"nbgrader autograde (no sandbox): median {stock:.1f} s = {stock / args.count:.2f} s per submission"
    )
    print(
        f"labs grade -j 2 (bubblewrap):   median {ours:.1f} s = {ours / args.count:.2f} s per submission "
        f"(whole command: sandbox start, reference run, gradebook, reports)"
    )
    ratios = sorted(a / b for a, b in rounds)
    print(f"throughput ratio: {stock / ours:.2f}x (medians); per round {ratios[0]:.2f}x to {ratios[-1]:.2f}x")
    print(
        f"sandbox job wall per submission: median {statistics.median(job_seconds.values()):.2f} s; "
        f"a correct submission's own cells unsandboxed in a warm shell: {own:.2f} s; "
        f"overhead: {job_seconds[correct] - own:.2f} s"
    )
    print("isolation: " + "; ".join(results["isolation"]))


if __name__ == "__main__":
    main()
