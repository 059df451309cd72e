"""Try a lab's probes without the sandbox: source, blank release and wrong solutions, side by side.

``python -m graders.trial course/02_tensors/lab_tensors.ipynb [--wrong tests/wrong_solutions]``
runs each version in its own unsandboxed subprocess (the instructor's own code only) and prints,
per graded cell, whether its probe told the version apart from the source.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from graders import wire
from graders.compare import compare
from graders.job import Job
from graders.probing import load_probes
from graders.restore import nbgrader_meta, reference_cells, restore

SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION.*?### END SOLUTION[ \t]*$", re.S | re.M)


def probes_file(lab: Path) -> Path:
    """Where a lab's probes live: ``<chapter>/probes/<lab stem>.py``."""
    return lab.parent / "probes" / f"{lab.stem}.py"


def blank_version(source_nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The source with every solution replaced the way nbgrader's release does it."""
    nb = nbformat.from_dict(json.loads(json.dumps(source_nb)))
    for cell in nb.cells:
        if cell.cell_type == "code" and nbgrader_meta(cell).get("solution"):
            cell.source = SOLUTION.sub(lambda m: f"{m.group(1)}raise NotImplementedError()", cell.source)
    return nb


def with_cell(source_nb: nbformat.NotebookNode, grade_id: str, code: str) -> nbformat.NotebookNode:
    """The source with the solution cell ``grade_id`` replaced by ``code``."""
    nb = nbformat.from_dict(json.loads(json.dumps(source_nb)))
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade_id") == grade_id:
            cell.source = code
    return nb


def run_unsandboxed(job: Job, timeout: float = 600) -> dict:
    """Run ``job`` in a fresh Python process (no isolation: trusted notebooks only)."""
    proc = subprocess.run([sys.executable, "-m", "graders.job"], input=json.dumps(job.to_plain()).encode(),
                          capture_output=True, timeout=timeout, check=False)
    if proc.returncode != 0 or not proc.stdout:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"job failed with exit code {proc.returncode}: {' | '.join(tail)}")
    return wire.decode(proc.stdout)


def scores(result: dict, reference: dict, probes: dict, points: dict[str, float]) -> dict[str, tuple[float, str]]:
    """grade_id -> (points earned, why not) for one version against the reference."""
    out = {}
    for grade_id, worth in points.items():
        cell = result["cells"].get(grade_id, {"ok": False, "error": "cell missing"})
        found = probes.get(grade_id)
        if found is None:
            out[grade_id] = (0.0, "no probe for this cell")
            continue
        verdict = compare(result["probes"].get(grade_id, {"error": "not run"}), reference["probes"][grade_id],
                          found.rtol, found.atol)
        why = "; ".join(filter(None, ["" if cell["ok"] else f"visible tests: {cell['error']}", verdict.why,
                                      verdict.detail and f"first difference: {verdict.detail}"]))
        out[grade_id] = (worth if cell["ok"] and verdict.ok else 0.0, why)
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """``LAB [--wrong DIR]``; ``--help`` prints the usage, a missing lab or probe file exits 2 with one line."""
    parser = argparse.ArgumentParser(prog="python -m graders.trial", description=__doc__.split("\n\n")[0])
    parser.add_argument("lab", type=Path, help="the lab's source notebook, course/NN_topic/lab_<x>.ipynb")
    parser.add_argument("--wrong", type=Path, default=Path("tests/wrong_solutions"),
                        help="folder of <chapter>/<solution grade_id>__<slug>.py (default: tests/wrong_solutions)")
    args = parser.parse_args(argv)
    for needed in (args.lab, probes_file(args.lab)):
        if not needed.is_file():
            parser.error(f"{needed}: no such file")
    return args


def main(argv: list[str] | None = None) -> int:
    """Print, for each version of the lab, the points per graded cell and why any were lost."""
    args = parse_args(argv)
    lab, wrong_dir = args.lab, args.wrong
    source = nbformat.read(lab, as_version=4)
    source_text = probes_file(lab).read_text(encoding="utf-8")
    probes = load_probes(source_text, str(probes_file(lab)))
    salt = int(time.time())
    points = {c.key: float(nbgrader_meta(next(x for x in source.cells if nbgrader_meta(x).get("grade_id") == c.key))
                           ["points"]) for c in reference_cells(source) if c.graded}

    def job_for(nb: nbformat.NotebookNode) -> Job:
        return Job(restore(source, nb).cells, source_text, str(probes_file(lab)), salt)

    reference = run_unsandboxed(Job(reference_cells(source), source_text, str(probes_file(lab)), salt, traceback=True))
    versions = {"source": source, "blank": blank_version(source)}
    for path in sorted((wrong_dir / lab.parent.name).glob("*__*.py")):
        versions[f"wrong {path.stem}"] = with_cell(source, path.stem.split("__")[0], path.read_text(encoding="utf-8"))
    failures = 0
    for name, nb in versions.items():
        got = scores(run_unsandboxed(job_for(nb)), reference, probes, points)
        total = sum(p for p, _ in got.values())
        expected = {"source": total == sum(points.values()), "blank": total == 0}.get(name)
        if name.startswith("wrong"):
            target = name.split()[1].split("__")[0]
            test_ids = [g for g in points if g == f"test_{target}" or g.endswith(target)]
            expected = any(got[g][0] == 0 for g in test_ids) if test_ids else total < sum(points.values())
        failures += not expected
        print(f"{'ok  ' if expected else 'FAIL'} {name}: {total:g}/{sum(points.values()):g}")
        for grade_id, (earned, why) in got.items():
            if why or name == "source":
                print(f"       {grade_id}: {earned:g}/{points[grade_id]:g} {why}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
