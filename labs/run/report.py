"""What `labs run` leaves behind: a terminal table, report.json and junit.xml."""

from __future__ import annotations

import json
import platform
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.table import Table

from labs.run.execute import NotebookResult

STATUS_STYLE = {"passed": "green", "failed": "red", "timeout": "yellow", "killed": "magenta"}


def summary_table(results: list[NotebookResult]) -> Table:
    """One row per notebook: status, time, peak memory, and where it failed."""
    table = Table(title="labs run", show_lines=False)
    for column in (
        "notebook",
        "status",
        "time (s)",
        "peak RSS (MiB)",
        "CUDA peak (MiB)",
        "skipped",
        "problem",
    ):
        table.add_column(column, overflow="fold")
    for r in sorted(results, key=lambda r: r.notebook):
        problem = f"cell {r.cell}: {r.error}" if r.cell is not None else (r.error or "")
        table.add_row(
            r.notebook,
            f"[{STATUS_STYLE.get(r.status, 'white')}]{r.status}[/]",
            f"{r.seconds:.1f}",
            _fmt(r.peak_rss_mb),
            _fmt(r.cuda_peak_mb),
            str(len(r.skipped)) if r.skipped else "-",
            problem[:300],
        )
    return table


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def write_json(results: list[NotebookResult], path: Path, settings: dict) -> None:
    """Machine-readable report: settings, totals and one record per notebook."""
    payload = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "settings": settings,
        "totals": {
            "notebooks": len(results),
            "passed": sum(r.passed for r in results),
            "failed": sum(not r.passed for r in results),
            "seconds": round(sum(r.seconds for r in results), 2),
            "skipped_cells": sum(len(r.skipped) for r in results),
        },
        "notebooks": [r.to_dict() for r in sorted(results, key=lambda r: r.notebook)],
    }
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def write_junit(results: list[NotebookResult], path: Path) -> None:
    """JUnit XML, one testcase per notebook, so CI systems show notebook failures natively."""
    suite = ET.Element(
        "testsuite",
        name="labs run",
        tests=str(len(results)),
        failures=str(sum(not r.passed for r in results)),
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    for r in sorted(results, key=lambda r: r.notebook):
        case = ET.SubElement(
            suite,
            "testcase",
            classname=Path(r.notebook).parent.name or "course",
            name=Path(r.notebook).name,
            time=f"{r.seconds:.3f}",
        )
        if not r.passed:
            where = f"cell {r.cell}: " if r.cell is not None else ""
            failure = ET.SubElement(case, "failure", type=r.status, message=f"{where}{r.error}"[:500])
            failure.text = f"{r.notebook} {where}{r.error}\nexecuted notebook: {r.output}"
        if r.skipped:
            ET.SubElement(case, "system-out").text = "\n".join(skip_lines(r))
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def skip_lines(result: NotebookResult) -> list[str]:
    """``file:cell: skipped: why`` for each cell the notebook declared it skipped."""
    return [f"{result.notebook}:{s['cell']}: skipped: {s['why']}" for s in result.skipped]


def skip_summary(results: list[NotebookResult], device: str) -> str | None:
    """The closing line of a run that left cells unexecuted, or None when every experiment ran."""
    count = sum(len(r.skipped) for r in results)
    if not count:
        return None
    cells = "cell needs" if count == 1 else "cells need"
    return (
        f"{count} {cells} CUDA: run with --device cuda on a GPU runner"
        if device != "cuda"
        else (f"{count} cells skipped on CUDA")
    )


def print_summary(results: list[NotebookResult], console: Console, device: str = "cpu") -> None:
    """The table, the skipped cells and why, one line per failure (file:cell: error) and a totals line."""
    console.print(summary_table(results))
    for r in sorted(results, key=lambda r: r.notebook):
        for line in skip_lines(r):
            console.print(f"[yellow]SKIP[/] {line}", highlight=False, soft_wrap=True)
    for r in sorted(results, key=lambda r: r.notebook):
        if not r.passed:
            where = f":{r.cell}" if r.cell is not None else ""
            console.print(f"[red]FAIL[/] {r.notebook}{where}: {r.error}", highlight=False, soft_wrap=True)
    passed = sum(r.passed for r in results)
    console.print(
        f"{passed}/{len(results)} notebooks passed", style="green" if passed == len(results) else "red"
    )
    closing = skip_summary(results, device)
    if closing:
        console.print(closing, style="yellow")
