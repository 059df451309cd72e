"""Merge the reports of a sharded `labs run` (``--shard i/n`` on n machines, a Slurm array) into one.

Each shard's report folder holds report.json, junit.xml and the executed notebooks under ``notebooks/``.
:func:`merge_reports` copies every shard's executed notebooks into one folder, rewrites the results to point
there, and returns them; :func:`labs.run.pipeline` then writes report.json and junit.xml as one run would
(and the static course from them with ``--html``). A notebook reported by two shards, or a folder without a
report.json, is refused: the shards were not one split of one run.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, fields
from pathlib import Path

from labs.run import report
from labs.run.execute import NotebookResult

RESULT_FIELDS = {f.name for f in fields(NotebookResult)}


class MergeError(ValueError):
    """Shard reports that cannot be one run's (the message names the folder or notebook)."""


def read_shard(folder: Path) -> tuple[dict, list[NotebookResult]]:
    """A shard folder's report.json: its settings and a result per notebook."""
    path = folder / "report.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MergeError(f"{path}: no report (did that shard run?)") from None
    except (OSError, ValueError) as err:
        raise MergeError(f"{path}: not a labs run report ({err})") from None
    try:
        results = [
            NotebookResult(**{k: v for k, v in entry.items() if k in RESULT_FIELDS})
            for entry in data["notebooks"]
        ]
    except (KeyError, TypeError) as err:
        raise MergeError(f"{path}: not a labs run report ({err})") from None
    return data.get("settings", {}), results


def _moved(result: NotebookResult, shard: Path, out: Path) -> NotebookResult:
    """``result`` with its executed notebook copied from ``shard/notebooks`` to ``out/notebooks``."""
    executed = Path(result.output)
    try:
        relative = executed.resolve().relative_to((shard / "notebooks").resolve())
    except ValueError:  # written elsewhere (an older report): leave it where it is
        return result
    target = out / "notebooks" / relative
    if executed.is_file() and executed.resolve() != target.resolve():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(executed, target)
    result.output = str(target)
    return result


def merge_reports(shards: list[Path], out: Path) -> tuple[dict, list[NotebookResult]]:
    """Every shard's results, their executed notebooks copied under ``out/notebooks``; the merged settings.

    Raises :class:`MergeError` when a folder has no report or two shards report the same notebook.
    """
    if not shards:
        raise MergeError("no shard report folders given")
    out = out.resolve()
    seen: dict[str, Path] = {}
    merged: list[NotebookResult] = []
    every: dict[Path, dict] = {}
    for shard in (s.resolve() for s in shards):
        every[shard], results = read_shard(shard)
        for result in results:
            if result.notebook in seen:
                raise MergeError(f"{result.notebook}: reported by both {seen[result.notebook]} and {shard}")
            seen[result.notebook] = shard
            merged.append(_moved(result, shard, out))
    settings = next(iter(every.values()))
    mode = {k: settings.get(k) for k in ("device", "smoke")}
    if mismatch := [str(shard) for shard, these in every.items() if {k: these.get(k) for k in mode} != mode]:
        raise MergeError(f"{', '.join(mismatch)}: ran with another device or smoke setting than {shards[0]}")
    return settings | {"shard": None, "merged_from": [str(s) for s in shards]}, merged


@dataclass
class Merged:
    """A merged run: its settings (the shards' device and smoke), results, report files and site (or None)."""

    settings: dict
    results: list[NotebookResult]
    reports: list[Path]
    site: Path | None = None


def write_merged(shards: list[Path], out: Path, html: bool = False) -> Merged:
    """Merge ``shards`` into ``out``: report.json, junit.xml, and the static course when ``html``."""
    settings, results = merge_reports(shards, out)
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    report.write_json(results, out / "report.json", settings)
    report.write_junit(results, out / "junit.xml")
    site = None
    if html:
        from labs.run.site import render_site

        site = render_site(results, out)
    return Merged(settings, results, [out / "report.json", out / "junit.xml"], site)
