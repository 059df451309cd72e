"""`labs run-merge`: the reports of a sharded `labs run` (a Slurm array, n machines) become one run's."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from labs.run import report
from labs.run.execute import NotebookResult
from labs.run.merge import MergeError, merge_reports, write_merged
from tests.inprocess import labs_here


def _shard(folder: Path, names: list[str], status: str = "passed", device: str = "cpu") -> Path:
    """A shard's report folder as `labs run --report FOLDER` leaves it: executed notebooks and report.json."""
    results = []
    for name in names:
        executed = folder / "notebooks" / name
        executed.parent.mkdir(parents=True, exist_ok=True)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"print({name!r})")])
        nbformat.write(nb, executed)
        results.append(
            NotebookResult(
                name,
                status,
                1.5,
                str(executed.resolve()),
                code_cells=1,
                executed_cells=1,
                skipped=[{"cell": 0, "why": "needs CUDA"}] if "cuda" in name else [],
            )
        )
    report.write_json(
        results,
        folder / "report.json",
        {"device": device, "smoke": True, "jobs": 1, "shard": "1/2", "timeout": 600},
    )
    return folder


def test_shards_merge_into_one_report(tmp_path: Path) -> None:
    one = _shard(tmp_path / "shard-1", ["course/01_a/1_x.ipynb", "course/02_b/lab_cuda.ipynb"])
    two = _shard(tmp_path / "shard-2", ["course/01_a/2_y.ipynb"])
    merged = write_merged([one, two], tmp_path / "merged")
    data = json.loads((tmp_path / "merged" / "report.json").read_text())
    assert [n["notebook"] for n in data["notebooks"]] == [
        "course/01_a/1_x.ipynb",
        "course/01_a/2_y.ipynb",
        "course/02_b/lab_cuda.ipynb",
    ]
    assert data["totals"] | {"seconds": 0} == {
        "notebooks": 3,
        "passed": 3,
        "failed": 0,
        "seconds": 0,
        "skipped_cells": 1,
    }
    assert data["settings"]["shard"] is None and data["settings"]["device"] == "cpu"
    assert data["settings"]["merged_from"] == [str(one.resolve()), str(two.resolve())]
    for entry in data[
        "notebooks"
    ]:  # each executed notebook copied into the merged folder, and pointed at there
        assert Path(entry["output"]) == (tmp_path / "merged" / "notebooks" / entry["notebook"]).resolve()
        assert entry["notebook"] in Path(entry["output"]).read_text()
    assert 'tests="3"' in (tmp_path / "merged" / "junit.xml").read_text()
    assert merged.site is None and len(merged.results) == 3


def test_a_notebook_in_two_shards_is_refused(tmp_path: Path) -> None:
    one = _shard(tmp_path / "shard-1", ["course/01_a/1_x.ipynb"])
    two = _shard(tmp_path / "shard-2", ["course/01_a/1_x.ipynb"])
    with pytest.raises(MergeError, match="1_x.ipynb: reported by both"):
        merge_reports([one, two], tmp_path / "merged")


def test_a_missing_shard_or_another_device_is_refused(tmp_path: Path) -> None:
    one = _shard(tmp_path / "shard-1", ["course/01_a/1_x.ipynb"])
    with pytest.raises(MergeError, match="no report"):
        merge_reports([one, tmp_path / "shard-2"], tmp_path / "merged")
    cuda = _shard(tmp_path / "shard-3", ["course/01_a/2_y.ipynb"], device="cuda")
    with pytest.raises(MergeError, match="another device or smoke setting"):
        merge_reports([one, cuda], tmp_path / "merged")


@pytest.mark.slow
def test_cli_exit_status_says_whether_every_notebook_passed(tmp_path: Path) -> None:
    one = _shard(tmp_path / "shard-1", ["course/01_a/1_x.ipynb"])
    two = _shard(tmp_path / "shard-2", ["course/01_a/2_y.ipynb"], status="failed")
    proc = labs_here("run-merge", str(one), str(two), "--report", str(tmp_path / "merged"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1/2 notebooks passed" in proc.stdout and "merged from 2 shards" in proc.stdout
    proc = labs_here("run-merge", str(one), str(tmp_path / "nowhere"), "--report", str(tmp_path / "merged"))
    assert proc.returncode == 2 and "no report" in proc.stderr
