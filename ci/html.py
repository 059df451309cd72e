"""Static HTML of the executed notebooks (placeholder until the site renderer lands)."""

from __future__ import annotations

from pathlib import Path

from ci.runner import NotebookResult


def render_site(results: list[NotebookResult], report_dir: Path) -> Path:
    """Render executed notebooks to ``report_dir/site`` with an index page per chapter; returns index.html."""
    raise NotImplementedError("ci.html.render_site is being written (issue 9)")
