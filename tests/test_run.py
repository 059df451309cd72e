"""`labs run` on the fixture course: passing notebooks pass, each failing fixture fails for its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, labs

pytestmark = pytest.mark.slow
FAILING = FIXTURES / "failing"


def _report(report_dir: Path) -> dict[str, dict]:
    data = json.loads((report_dir / "report.json").read_text())
    return {Path(r["notebook"]).parent.name: r for r in data["notebooks"]}


def test_failing_fixtures_fail_for_the_right_reason(tmp_path: Path):
    folders = ["raises", "timeout", "killed", "deprecated", "deprecated_torch", "empty"]
    result = labs(
        "run",
        *(str(FAILING / f) for f in folders),
        "--timeout",
        "15",
        "--report",
        str(tmp_path),
        "--device",
        "cpu",
        "--jobs",
        "2",
    )
    assert result.returncode == 1, result.stdout
    report = _report(tmp_path)
    assert set(report) == set(folders)
    expected = {
        "raises": ("failed", 2, "ValueError: this notebook fails on purpose"),
        "timeout": ("timeout", 2, "timed out after 15 s"),
        "killed": ("killed", 2, "kernel died"),
        "deprecated": ("failed", 2, "DeprecationWarning: old_api is deprecated"),
        "deprecated_torch": ("failed", 2, "FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated"),
        "empty": ("failed", None, "silent skip: no code cell was executed"),
    }
    for name, (status, cell, message) in expected.items():
        record = report[name]
        assert record["status"] == status, (name, record)
        assert record["cell"] == cell, (name, record)
        assert message in record["error"], (name, record["error"])
    junit = (tmp_path / "junit.xml").read_text()
    assert 'failures="6"' in junit


def test_skipped_cells_are_listed_with_why_and_a_cpu_run_says_what_needs_cuda(tmp_path: Path):
    import nbformat

    nb = nbformat.read(FIXTURES / "course" / "fx_basic" / "1_passes.ipynb", as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            'from labutils import cuda_only\nif cuda_only(DEVICE, "streams and events"):\n    raise AssertionError("ran")'
        )
    )
    path = tmp_path / "ch" / "1_skips.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    result = labs("run", str(path), "--smoke", "--device", "cpu", "--report", str(tmp_path / "r"))
    assert result.returncode == 0, result.stdout + result.stderr
    record = _report(tmp_path / "r")["ch"]
    cell = len(nb.cells) - 1
    assert record["skipped"] == [
        {"cell": cell, "why": "streams and events needs a CUDA device (run with DEVICE='cuda' on a GPU)."}
    ]
    out = " ".join(result.stdout.split())
    assert f"1_skips.ipynb:{cell}: skipped: streams and events needs a CUDA device" in out
    assert "1 cell needs CUDA: run with --device cuda on a GPU runner" in out
    assert "skipped: streams and events" in (tmp_path / "r" / "junit.xml").read_text()
    assert json.loads((tmp_path / "r" / "report.json").read_text())["totals"]["skipped_cells"] == 1


def test_native_output_of_kernels_stays_out_of_the_terminal(tmp_path: Path):
    import nbformat

    nb = nbformat.read(FIXTURES / "course" / "fx_basic" / "1_passes.ipynb", as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "from torch.profiler import ProfilerActivity, profile\nwith profile(activities=[ProfilerActivity.CPU]):\n"
            "    torch.ones(3) + 1"
        )
    )
    path = tmp_path / "ch" / "1_profiles.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    result = labs(
        "run",
        str(path),
        "--smoke",
        "--device",
        "cpu",
        "--report",
        str(tmp_path / "r"),
        "--cache",
        str(tmp_path / "cache"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "USDT:" not in result.stdout + result.stderr  # kineto's profiler_start/stop lines
    assert "USDT:" in (tmp_path / "cache" / "kernels.log").read_text()


def test_a_fast_notebook_is_no_silent_skip(tmp_path: Path):
    # Timings are for sharding only: a notebook far faster than recorded passes (a fast machine).
    notebook = (FIXTURES / "course" / "fx_basic" / "1_passes.ipynb").relative_to(FIXTURES.parent.parent)
    timings = tmp_path / "timings.json"
    timings.write_text(json.dumps({"cpu-smoke": {notebook.as_posix(): 600.0}}))
    result = labs(
        "run",
        notebook.as_posix(),
        "--smoke",
        "--device",
        "cpu",
        "--timings",
        str(timings),
        "--report",
        str(tmp_path / "r"),
    )
    assert result.returncode == 0, result.stdout


def test_passing_course_records_timings_then_shards(tmp_path: Path):
    # One run of the fixture course both passes and records its timings (one `labs run` fewer, 2 kernels).
    timings = tmp_path / "timings.json"
    result = labs(
        "run",
        str(FIXTURES / "course"),
        "--smoke",
        "--report",
        str(tmp_path / "r"),
        "--jobs",
        "2",
        "--record-timings",
        "--timings",
        str(timings),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "starting kernels cold" not in result.stderr  # the kernels were forked from the zygote
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["totals"] == {
        "notebooks": 2,
        "passed": 2,
        "failed": 0,
        "seconds": data["totals"]["seconds"],
        "skipped_cells": 0,
    }
    for record in data["notebooks"]:
        assert record["executed_cells"] == record["code_cells"] > 0
        assert record["peak_rss_mb"] > 50  # the kernel imported torch
        assert Path(record["output"]).exists()
    junit = (tmp_path / "r" / "junit.xml").read_text()
    assert 'tests="2"' in junit and 'failures="0"' in junit
    executed = Path(data["notebooks"][0]["output"]).read_text()
    assert '"SMOKE = True' in executed or "SMOKE = True" in executed

    ((key, recorded),) = json.loads(
        timings.read_text()
    ).items()  # "cpu-smoke", or "cuda-smoke" on a GPU runner
    assert key.endswith("-smoke") and len(recorded) == 2 and all(v > 0 for v in recorded.values())
    device = key.removesuffix("-smoke")
    shards = [
        labs(
            "run",
            str(FIXTURES / "course"),
            "--smoke",
            "--device",
            device,
            "--shard",
            f"{i}/2",
            "--timings",
            str(timings),
            "--report",
            str(tmp_path / f"s{i}"),
        )
        for i in (1, 2)
    ]
    assert all(s.returncode == 0 for s in shards)
    ran = [
        [r["notebook"] for r in json.loads((tmp_path / f"s{i}" / "report.json").read_text())["notebooks"]]
        for i in (1, 2)
    ]
    assert [len(r) for r in ran] == [1, 1] and sorted(ran[0] + ran[1]) == sorted(recorded)
    assert ran[0] == [max(recorded, key=recorded.get)]  # longest first
