"""The static course (``labs run --html``): the executed notebooks as a MkDocs Material site.

``render_site`` writes a MkDocs project into ``report_dir/site-src`` (a copy of each executed
notebook with a status box as its first cell, a Markdown index per chapter and for the course,
``mkdocs.yml``) and builds it into ``report_dir/site`` with mkdocs-jupyter, which renders the
notebooks as they ran (nothing is executed again). Pages use plain ``.html`` URLs, so the folder
reads from ``file://``; Material's offline plugin inlines the search index into a script, and a
small local stand-in for the worker shim Material would fetch from unpkg runs the search worker
from ``file://`` as well, so navigation, pictures (data URIs and inline SVG) and full-text search
all work with no server and no network.
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml

from labs.run import site_hooks as hooks
from labs.run.execute import NotebookResult

SITE = "site"
SOURCE = "site-src"
ASSETS = "assets/labs"
MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/MathJax.js?config=TeX-AMS_CHTML-full,Safe"
WORKER_SHIM = f"{ASSETS}/iframe-worker.js"  # the name keeps Material's offline plugin from adding unpkg's

# Web workers cannot start from file:// pages, so Material's search (a worker) needs a stand-in
# there: this runs the worker script in a hidden same-origin iframe and passes messages through it.
_SHIM_JS = r"""(function () {
  if (location.protocol !== "file:") return;
  class FileWorker extends EventTarget {
    constructor(url) {
      super();
      this.pending = [];
      this.frame = document.createElement("iframe");
      this.frame.hidden = true;
      document.documentElement.appendChild(this.frame);
      const scope = this.frame.contentWindow;
      scope.postMessage = (data) =>
        this.dispatchEvent(new MessageEvent("message", {data: data}));
      const script = scope.document.createElement("script");
      script.src = new URL(url, location.href).href;
      script.onload = () => {
        this.scope = scope;
        this.pending.splice(0).forEach((data) => this.postMessage(data));
      };
      script.onerror = () => this.dispatchEvent(new Event("error"));
      scope.document.head.appendChild(script);
    }
    postMessage(data) {
      if (!this.scope) { this.pending.push(data); return; }
      this.scope.dispatchEvent(new this.scope.MessageEvent("message", {data: data}));
    }
    terminate() { this.frame.remove(); }
  }
  window.Worker = FileWorker;
})();
"""

_CSS = """
.labs-run { font-size: .75rem; color: #555; margin: 0 0 .8em; }
.labs-failure { border: 2px solid #c62828; background: #ffebee; padding: 8px 12px; margin: 0 0 16px; }
.labs-failure pre { white-space: pre-wrap; margin: 6px 0 0; }
.labs-skipped { border-left: 4px solid #f9a825; background: #fffde7; padding: 6px 12px; margin: 0 0 16px; }
.labs-table td.time { text-align: right; white-space: nowrap; }
.passed { color: #2e7d32; font-weight: 600; }
.failed, .timeout, .killed { color: #c62828; font-weight: 600; }
.labs-table .error { color: #555; font-size: .7rem; white-space: pre-wrap; }
.labs-table .skipped { color: #8a6d00; font-size: .7rem; }
"""


@dataclass
class Page:
    """One rendered notebook: where it came from, where its page is, and how its run went."""

    result: NotebookResult
    chapter: str
    slug: str
    title: str

    @property
    def href(self) -> str:
        """The page, relative to the site root."""
        return f"{self.chapter}/{self.slug}.html"

    @property
    def source(self) -> str:
        """The notebook copy in the MkDocs docs folder, relative to it."""
        return f"{self.chapter}/{self.slug}.ipynb"


def render_site(results: list[NotebookResult], report_dir: Path) -> Path:
    """Build ``report_dir/site`` from the executed notebooks of ``results``; returns its index.html."""
    report_dir = Path(report_dir).resolve()
    site, source = report_dir / SITE, report_dir / SOURCE
    for folder in (site, source):
        if folder.exists():
            shutil.rmtree(folder)
    pages = _plan_pages(results)
    chapters = _by_chapter(pages)
    docs = source / "docs"
    _write_docs(docs, chapters, _run_info(report_dir / "report.json"))
    config = source / "mkdocs.yml"
    config.write_text(yaml.safe_dump(mkdocs_config(chapters, docs, site), sort_keys=False), encoding="utf-8")
    _build(config)
    return site / "index.html"


def mkdocs_config(chapters: dict[str, list[Page]], docs: Path, site: Path) -> dict:
    """The MkDocs configuration: Material, offline search, mkdocs-jupyter rendering without executing."""
    nav: list = [{"Course": "index.md"}]
    for chapter, pages in chapters.items():
        nav.append({chapter: [f"{chapter}/index.md", *({p.title: p.source} for p in pages)]})
    return {
        "site_name": "PyTorch Labs",
        "docs_dir": str(docs),
        "site_dir": str(site),
        "use_directory_urls": False,
        "theme": {
            "name": "material",
            "font": False,
            "features": ["navigation.indexes", "navigation.sections", "search.highlight"],
        },
        "extra": {"polyfills": [WORKER_SHIM]},
        "extra_css": [f"{ASSETS}/labs.css"],
        "plugins": [
            "search",
            "offline",
            {
                "mkdocs-jupyter": {
                    "include": ["*.ipynb"],
                    "execute": False,
                    "cache": False,
                    "include_requirejs": False,
                    "ignore_h1_titles": True,
                    "custom_mathjax_url": MATHJAX,
                }
            },
        ],
        "markdown_extensions": ["tables", "attr_list", "md_in_html"],
        "hooks": [str(Path(hooks.__file__).resolve())],  # SVG outputs inline
        "nav": nav,
    }


def _build(config: Path) -> None:
    """``mkdocs build`` in this process, quiet unless something goes wrong."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    loggers = [logging.getLogger(name) for name in ("mkdocs", "traitlets", "NbConvertApp")]
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(logging.ERROR)
    try:
        build(load_config(str(config)))
    finally:
        for log, level in zip(loggers, levels, strict=True):
            log.setLevel(level)


def _write_docs(docs: Path, chapters: dict[str, list[Page]], run: dict) -> None:
    (docs / ASSETS).mkdir(parents=True)
    (docs / WORKER_SHIM).write_text(_SHIM_JS, encoding="utf-8")
    (docs / ASSETS / "labs.css").write_text(_CSS, encoding="utf-8")
    every = [p for pages in chapters.values() for p in pages]
    (docs / "index.md").write_text(_course_index(chapters, every, run), encoding="utf-8")
    for chapter, pages in chapters.items():
        (docs / chapter).mkdir(parents=True, exist_ok=True)
        (docs / chapter / "index.md").write_text(_chapter_index(chapter, pages), encoding="utf-8")
        for page in pages:
            nbformat.write(_page_notebook(page), docs / page.source)


def _run_info(report_json: Path) -> dict:
    """What report.json says about the run as a whole (settings, machine, date), or {} without one."""
    try:
        data = json.loads(report_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {key: data.get(key) for key in ("created", "machine", "settings")}


def _plan_pages(results: Iterable[NotebookResult]) -> list[Page]:
    pages: list[Page] = []
    taken: set[str] = set()
    for result in results:
        source = Path(result.notebook)
        chapter = _safe(source.parent.name) or "notebooks"
        slug = base = _safe(source.stem) or "notebook"
        counter = 2
        while f"{chapter}/{slug}" in taken or slug == "index":
            slug, counter = f"{base}_{counter}", counter + 1
        taken.add(f"{chapter}/{slug}")
        pages.append(Page(result, chapter, slug, _title(_load(result)) or source.stem))
    return pages


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")


def _load(result: NotebookResult) -> nbformat.NotebookNode | None:
    """The executed notebook, else the source (a run that died before saving), else None."""
    for path in (Path(result.output), Path(result.notebook)):
        try:
            return nbformat.read(path, as_version=4)
        except (OSError, ValueError):
            continue
    return None


def _title(nb: nbformat.NotebookNode | None) -> str | None:
    for cell in nb.cells if nb else []:
        if cell.cell_type == "markdown":
            match = re.search(r"^#{1,3}\s+(.+?)\s*#*\s*$", cell.source, re.M)
            if match:
                return re.sub(r"[`*_]", "", match.group(1))
    return None


def _page_notebook(page: Page) -> nbformat.NotebookNode:
    """The notebook as it ran, with a first cell saying how the run went (HTML, rendered as is)."""
    nb = _load(page.result)
    box = nbformat.v4.new_raw_cell(status_box(page.result, readable=nb is not None))
    nb = nb or nbformat.v4.new_notebook()
    box.metadata["raw_mimetype"] = "text/html"
    nb.cells.insert(0, box)
    return nb


def status_box(result: NotebookResult, readable: bool = True) -> str:
    """HTML for the top of a notebook's page: run figures, the failure and why, the skipped cells."""
    parts = [f'<div class="labs-run">{html.escape(_run_line(result))}</div>']
    if not result.passed or not readable:
        where = f" at cell {result.cell}" if result.cell is not None else ""
        why = result.error or "no error message recorded"
        if not readable:
            why = f"{why}\n(neither the executed notebook {result.output} nor the source could be read)"
        parts.append(
            f'<div class="labs-failure"><strong>{html.escape(result.status)}{where}</strong> after '
            f"{result.seconds:.1f} s<pre>{html.escape(why)}</pre></div>"
        )
    if result.skipped:
        items = "".join(f"<li>cell {s['cell']}: {html.escape(s['why'])}</li>" for s in result.skipped)
        parts.append(
            f'<div class="labs-skipped"><strong>{_need_cuda(len(result.skipped))}</strong> '
            f"(skipped on this run):<ul>{items}</ul></div>"
        )
    return "\n".join(parts)


def _need_cuda(count: int) -> str:
    return f"{count} cell needs CUDA" if count == 1 else f"{count} cells need CUDA"


def _run_line(result: NotebookResult) -> str:
    figures = [
        f"{result.status} in {result.seconds:.1f} s",
        f"{result.executed_cells} of {result.code_cells} code cells executed",
    ]
    if result.peak_rss_mb is not None:
        figures.append(f"peak RSS {result.peak_rss_mb:.0f} MiB")
    if result.cuda_peak_mb is not None:
        figures.append(f"CUDA peak {result.cuda_peak_mb:.0f} MiB")
    return ", ".join(figures)


def _by_chapter(pages: list[Page]) -> dict[str, list[Page]]:
    chapters: dict[str, list[Page]] = {}
    for page in sorted(pages, key=lambda p: (p.chapter, p.slug)):
        chapters.setdefault(page.chapter, []).append(page)
    return chapters


def _error_line(result: NotebookResult) -> str:
    if result.passed or not result.error:
        return ""
    lines = [line for line in result.error.strip().splitlines() if line.strip()]
    return f'<div class="error">{html.escape(lines[-1] if lines else "")}</div>'


def _skip_lines(result: NotebookResult) -> str:
    return "".join(
        f'<div class="skipped">cell {s["cell"]} skipped: {html.escape(s["why"])}</div>'
        for s in result.skipped
    )


def _rows(pages: list[Page], prefix: str) -> str:
    rows = []
    for page in pages:
        r = page.result
        link = f'<a href="{html.escape(prefix + page.href)}">{html.escape(Path(r.notebook).name)}</a>'
        status = f'<td class="{html.escape(r.status)}">{html.escape(r.status)}</td>'
        rss = f"{r.peak_rss_mb:.0f} MiB" if r.peak_rss_mb is not None else "-"
        rows.append(
            f"<tr><td>{link}<br>{html.escape(page.title)}{_error_line(r)}{_skip_lines(r)}</td>{status}"
            f'<td class="time">{r.seconds:.1f} s</td><td class="time">{rss}</td>'
            f'<td class="time">{r.executed_cells}/{r.code_cells}</td></tr>'
        )
    header = "<tr><th>notebook</th><th>status</th><th>time</th><th>peak RSS</th><th>cells run</th></tr>"
    return f'<table class="labs-table">\n{header}\n' + "\n".join(rows) + "\n</table>\n"


def _summary(pages: list[Page]) -> str:
    failed = sum(not p.result.passed for p in pages)
    seconds = sum(p.result.seconds for p in pages)
    skipped = sum(len(p.result.skipped) for p in pages)
    verdict = (
        f'<span class="failed">{failed} failed</span>' if failed else '<span class="passed">all passed</span>'
    )
    skips = f', <span class="skipped">{_need_cuda(skipped)} (skipped)</span>' if skipped else ""
    return f"<p>{len(pages)} notebooks, {verdict}{skips}, {seconds:.0f} s of execution.</p>\n"


def _settings_line(run: dict) -> str:
    settings = run.get("settings") or {}
    machine = run.get("machine") or {}
    words = [f"{key} {value}" for key, value in settings.items() if value not in (None, False)]
    words += [f"{key} {value}" for key, value in machine.items()]
    when = f" on {run['created']}" if run.get("created") else ""
    return f'<p class="labs-run">Run{when}: {html.escape(", ".join(words))}.</p>\n' if words or when else ""


def _chapter_index(chapter: str, pages: list[Page]) -> str:
    return f"# {chapter}\n\n" + _summary(pages) + "\n" + _rows(pages, "../")


def _course_index(chapters: dict[str, list[Page]], every: list[Page], run: dict) -> str:
    parts = ["# PyTorch Labs: the executed course\n\n", _summary(every), "\n", _settings_line(run), "\n"]
    for chapter, pages in chapters.items():
        parts.append(f"## {chapter}\n\n")
        parts.append(f'<p><a href="{html.escape(chapter)}/index.html">{html.escape(chapter)}</a></p>\n\n')
        parts.append(_rows(pages, "") + "\n")
    return "".join(parts)
