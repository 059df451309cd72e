"""Static HTML of the executed notebooks: ``report_dir/site`` with one index page per chapter.

Every picture is inside its page (PNG/JPEG as data URIs, SVG inline, markdown images embedded), so
the site reads offline; MathJax is the only script fetched from a CDN and it loads asynchronously,
so it never delays the page (offline, formulas stay as TeX). A failed notebook still gets its page,
with a banner saying why, and is marked failed in the indexes.
"""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import nbformat
from jinja2 import DictLoader
from nbconvert import HTMLExporter

from ci.runner import NotebookResult

SITE = "site"
PAGE_TEMPLATE = "labs_page.html.j2"

# Extends nbconvert's `lab` template: no require.js, MathJax async, SVG inline, a navigation bar.
_PAGE = r"""{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}
<script type="text/x-mathjax-config">
MathJax.Hub.Config({tex2jax: {inlineMath: [['$', '$'], ['\\(', '\\)']], processEscapes: true},
                    messageStyle: 'none'});
</script>
<script async src="{{ resources.mathjax_url }}"></script>
{%- endblock html_head_js_mathjax -%}
{%- block html_head_css -%}
<style type="text/css">{{ resources.labs.css }}</style>
{%- endblock html_head_css -%}
{%- block body_header -%}
{{ super() }}
<nav class="labs-nav">{{ resources.labs.nav }}</nav>
{{ resources.labs.banner }}
{%- endblock body_header -%}
{% block data_svg scoped -%}
<div class="jp-RenderedSVG jp-OutputArea-output {{ extra_class }}" data-mime-type="image/svg+xml">
{{ output.data['image/svg+xml'] | inline_svg }}
</div>
{%- endblock data_svg %}
"""

_CSS = """
.labs-nav { font: 14px/1.4 system-ui, sans-serif; padding: 8px 0 12px; }
.labs-nav a { margin-right: 1em; }
.labs-failure { font: 14px/1.4 system-ui, sans-serif; border: 2px solid #c62828; background: #ffebee;
  padding: 8px 12px; margin: 0 0 16px; }
.labs-failure pre { white-space: pre-wrap; margin: 6px 0 0; }
"""

_INDEX_CSS = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5em; }
th, td { text-align: left; padding: 4px 10px; border-bottom: 1px solid #ddd; vertical-align: top; }
td.time { text-align: right; white-space: nowrap; }
.passed { color: #2e7d32; font-weight: 600; }
.failed, .timeout, .killed { color: #c62828; font-weight: 600; }
.error { color: #555; font-size: 13px; white-space: pre-wrap; }
.skipped { color: #8a6d00; font-size: 13px; }
"""

_XML_PROLOG = re.compile(r"\A\s*(<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*|<!--.*?-->\s*)*", re.S)


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


def inline_svg(svg: str) -> str:
    """An SVG document as an element to place in HTML: XML prolog, DOCTYPE and leading comments removed."""
    return _XML_PROLOG.sub("", svg, count=1)


def render_site(results: list[NotebookResult], report_dir: Path) -> Path:
    """Render executed notebooks to ``report_dir/site`` with an index page per chapter; returns index.html."""
    site = Path(report_dir) / SITE
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    exporter = _exporter()
    pages = _plan_pages(results)
    for page in pages:
        target = site / page.href
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_render_notebook(exporter, page), encoding="utf-8")
    chapters = _by_chapter(pages)
    for chapter, chapter_pages in chapters.items():
        (site / chapter / "index.html").write_text(_chapter_index(chapter, chapter_pages), encoding="utf-8")
    index = site / "index.html"
    index.write_text(_site_index(chapters), encoding="utf-8")
    return index


def _exporter() -> HTMLExporter:
    exporter = HTMLExporter(extra_loaders=[DictLoader({PAGE_TEMPLATE: _PAGE})], template_file=PAGE_TEMPLATE,
                            embed_images=True)
    exporter.register_filter("inline_svg", inline_svg)
    return exporter


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


def _render_notebook(exporter: HTMLExporter, page: Page) -> str:
    result = page.result
    nb = _load(result)
    banner = ""
    if not result.passed or nb is None:
        where = f" at cell {result.cell}" if result.cell is not None else ""
        why = result.error or "no error message recorded"
        if nb is None:
            why = f"{why}\n(neither the executed notebook {result.output} nor the source could be read)"
        banner = (f'<div class="labs-failure"><strong>{html.escape(result.status)}{where}</strong> after '
                  f"{result.seconds:.1f} s<pre>{html.escape(why)}</pre></div>")
    chapter, name = html.escape(page.chapter), html.escape(Path(result.notebook).name)
    nav = f'<a href="../index.html">course</a><a href="index.html">{chapter}</a><span>{name}</span>'
    resources = {"metadata": {"name": page.title, "path": str(Path(result.notebook).resolve().parent)},
                 "labs": {"nav": nav, "banner": banner, "css": _CSS}}
    body, _ = exporter.from_notebook_node(nb or nbformat.v4.new_notebook(), resources=resources)
    return body


def _by_chapter(pages: list[Page]) -> dict[str, list[Page]]:
    chapters: dict[str, list[Page]] = {}
    for page in sorted(pages, key=lambda p: (p.chapter, p.slug)):
        chapters.setdefault(page.chapter, []).append(page)
    return chapters


def _document(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>{_INDEX_CSS}</style>\n</head>\n<body>\n{body}</body>\n</html>\n")


def _status_cell(result: NotebookResult) -> str:
    return f'<td class="{html.escape(result.status)}">{html.escape(result.status)}</td>'


def _error_line(result: NotebookResult) -> str:
    if result.passed or not result.error:
        return ""
    lines = [line for line in result.error.strip().splitlines() if line.strip()]
    return f'<div class="error">{html.escape(lines[-1] if lines else "")}</div>'


def _skip_lines(result: NotebookResult) -> str:
    return "".join(f'<div class="skipped">cell {s["cell"]} skipped: {html.escape(s["why"])}</div>'
                   for s in result.skipped)


def _rows(pages: list[Page], prefix: str) -> str:
    rows = []
    for page in pages:
        r = page.result
        link = f'<a href="{html.escape(prefix + page.href)}">{html.escape(Path(r.notebook).name)}</a>'
        rows.append(f'<tr><td>{link}'
                    f"<br>{html.escape(page.title)}{_error_line(r)}{_skip_lines(r)}</td>{_status_cell(r)}"
                    f'<td class="time">{r.seconds:.1f} s</td></tr>')
    header = "<tr><th>notebook</th><th>status</th><th>time</th></tr>"
    return f"<table>\n{header}\n" + "\n".join(rows) + "\n</table>\n"


def _summary(pages: list[Page]) -> str:
    failed = sum(not p.result.passed for p in pages)
    seconds = sum(p.result.seconds for p in pages)
    skipped = sum(len(p.result.skipped) for p in pages)
    verdict = (f'<span class="failed">{failed} failed</span>' if failed
               else '<span class="passed">all passed</span>')
    skips = f', <span class="skipped">{skipped} cells skipped (they need CUDA)</span>' if skipped else ""
    return f"<p>{len(pages)} notebooks, {verdict}{skips}, {seconds:.0f} s of execution.</p>\n"


def _chapter_index(chapter: str, pages: list[Page]) -> str:
    body = (f'<p><a href="../index.html">course</a></p>\n<h1>{html.escape(chapter)}</h1>\n'
            + _summary(pages) + _rows(pages, "../"))
    return _document(chapter, body)


def _site_index(chapters: dict[str, list[Page]]) -> str:
    every = [p for pages in chapters.values() for p in pages]
    parts = ["<h1>PyTorch Labs: the executed course</h1>\n", _summary(every)]
    for chapter, pages in chapters.items():
        parts.append(f'<h2><a href="{html.escape(chapter)}/index.html">{html.escape(chapter)}</a></h2>\n')
        parts.append(_rows(pages, ""))
    return _document("PyTorch Labs", "".join(parts))
