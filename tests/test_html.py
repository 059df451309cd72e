"""The static course (`labs run --html`): MkDocs Material pages of the executed notebooks, nav, search, run status."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from labs.run.execute import NotebookResult
from labs.run.site import render_site
from labs.run.site_hooks import inline_svg, on_page_content
from tests.conftest import FIXTURES, labs

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10" fill="#4c72b0"/></svg>'
SKIP_WHY = "pinned-memory copies need a CUDA device (run with DEVICE='cuda' on a GPU)."
RAISES = FIXTURES / "failing" / "raises"


class _Tags(HTMLParser):
    """Start tags of a page, with their attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(path: Path) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.tags


def _executed_notebook(path: Path) -> Path:
    """A lesson as `labs run` saves it: a title, a picture cell (PNG and SVG) and a cell skipped on CPU."""
    nb = nbformat.v4.new_notebook()
    picture = nbformat.v4.new_code_cell("draw()", execution_count=1)
    picture.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": SVG}),
    ]
    skipped = nbformat.v4.new_code_cell("cuda_only(DEVICE, 'pinned memory')", execution_count=2)
    skipped.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"SKIPPED on cpu: {SKIP_WHY}\n")]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 02.3 Pinned memory and streams\n\nWhere copies wait."),
        picture,
        skipped,
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """render_site over a fake report: a passed lesson with a picture and a skip, a failed one, run settings."""
    report = tmp_path_factory.mktemp("report")
    lesson = _executed_notebook(report / "notebooks" / "course" / "02_tensors" / "3_streams.ipynb")
    failed = _executed_notebook(report / "notebooks" / "course" / "02_tensors" / "lab_tensors.ipynb")
    results = [
        NotebookResult(
            notebook="course/02_tensors/3_streams.ipynb",
            status="passed",
            seconds=4.25,
            output=str(lesson),
            peak_rss_mb=251.4,
            code_cells=2,
            executed_cells=2,
            skipped=[{"cell": 2, "why": SKIP_WHY}],
        ),
        NotebookResult(
            notebook="course/02_tensors/lab_tensors.ipynb",
            status="failed",
            seconds=1.5,
            output=str(failed),
            code_cells=2,
            executed_cells=1,
            cell=2,
            error="Traceback ...\nValueError: strides disagree",
        ),
    ]
    (report / "report.json").write_text(
        json.dumps(
            {
                "created": "2026-12-01T15:27:54+00:00",
                "machine": {"python": "3.11.7"},
                "settings": {"device": "cpu", "smoke": True, "jobs": 2},
                "notebooks": [r.to_dict() for r in results],
            }
        )
    )
    assert render_site(results, report) == report.resolve() / "site" / "index.html"
    return report / "site"


def test_every_notebook_and_chapter_has_a_page(site: Path):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert {
        "index.html",
        "02_tensors/index.html",
        "02_tensors/3_streams.html",
        "02_tensors/lab_tensors.html",
    } <= pages


def test_navigation_reaches_every_page_from_every_page(site: Path):
    for page in ("index.html", "02_tensors/3_streams.html"):
        nav = [
            attrs.get("href")
            for tag, attrs in _tags(site / page)
            if tag == "a" and "md-nav__link" in (attrs.get("class") or "")
        ]
        resolved = {(site / page).parent.joinpath(h).resolve() for h in nav if h}
        for target in ("index.html", "02_tensors/3_streams.html", "02_tensors/lab_tensors.html"):
            assert (site / target).resolve() in resolved, f"{page}: no nav link to {target}"
    streams = (site / "02_tensors" / "3_streams.html").read_text(encoding="utf-8")
    assert "02.3 Pinned memory and streams" in streams  # the notebook's title names it in the nav


def test_search_index_holds_the_notebooks_text_and_the_skip_reason(site: Path):
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    text = {doc["location"]: doc["text"] for doc in index["docs"]}
    streams = " ".join(t for loc, t in text.items() if loc.startswith("02_tensors/3_streams.html"))
    assert "Where copies wait" in streams and "pinned-memory copies need a CUDA device" in streams
    inlined = (site / "search" / "search_index.js").read_text(encoding="utf-8")
    assert inlined.startswith("var __index = ")  # the offline plugin: search reads it from file:// too


def test_pages_show_pictures_inline_and_fetch_nothing_to_search(site: Path):
    page = (site / "02_tensors" / "3_streams.html").read_text(encoding="utf-8")
    assert f"data:image/png;base64,{PNG}" in page.replace("\n", "")
    svg = re.search(r'<div class="jp-RenderedSVG[^>]*>\s*(.*?)\s*</div>', page, re.S)
    assert svg and svg.group(1) == SVG  # inline, not an <img> and not a document inside the document
    mathjax = False
    for path in site.rglob("*.html"):
        scripts = [attrs.get("src") or "" for tag, attrs in _tags(path) if tag == "script"]
        assert not [s for s in scripts if "unpkg.com" in s], f"{path.name} loads the worker shim from unpkg"
        assert any(s.endswith("assets/labs/iframe-worker.js") for s in scripts), path.name
        online = [
            attrs
            for tag, attrs in _tags(path)
            if tag == "script" and re.match(r"^https?:", attrs.get("src") or "")
        ]
        for attrs in online:  # the only script from the internet, and it never blocks the page
            assert "mathjax" in (attrs["src"] or "") and "async" in attrs, f"{path.name}: {attrs}"
        mathjax |= bool(online)
        images = [attrs.get("src") or "" for tag, attrs in _tags(path) if tag == "img"]
        assert not [s for s in images if re.match(r"^https?:", s)], f"{path.name}: image from the internet"
    assert mathjax, "no notebook page loads MathJax (formulas would stay TeX even online)"


def test_notebook_pages_share_one_copy_of_jupyterlabs_stylesheet(site: Path):
    linked = []
    for name in ("3_streams", "lab_tensors"):
        page = site / "02_tensors" / f"{name}.html"
        text = page.read_text(encoding="utf-8")
        styles = re.findall(r"<style[^>]*>(.*?)</style>", text, re.S)
        assert max(map(len, styles)) < 10_000, f"{page.name}: a stylesheet is still pasted into the page"
        sheets = [
            attrs["href"]
            for tag, attrs in _tags(page)
            if tag == "link" and "notebook-" in (attrs.get("href") or "")
        ]
        assert sheets and all((page.parent / href).is_file() for href in sheets)
        linked.append(sheets)
    assert linked[0] == linked[1]
    assert ".jupyter-wrapper" in (site / "02_tensors" / linked[0][0]).read_text(encoding="utf-8")


def test_skipped_cells_and_run_figures_are_shown(site: Path):
    page = (site / "02_tensors" / "3_streams.html").read_text(encoding="utf-8")
    box = re.search(r'<div class="labs-skipped">(.*?)</div>', page, re.S)
    assert box and "1 cell needs CUDA" in box.group(1)
    assert "<li>cell 2: pinned-memory copies need a CUDA device" in box.group(1)
    assert "passed in 4.2 s, 2 of 2 code cells executed, peak RSS 251 MiB" in page
    chapter = (site / "02_tensors" / "index.html").read_text(encoding="utf-8")
    assert "cell 2 skipped: pinned-memory copies need a CUDA device" in chapter
    course = (site / "index.html").read_text(encoding="utf-8")
    assert "1 cell needs CUDA (skipped)" in course and "1 failed" in course
    assert "device cpu, smoke True, jobs 2, python 3.11.7" in course and "2026-12-01T15:27:54" in course


def test_status_and_time_per_notebook_in_the_indexes(site: Path):
    for index, prefix in ((site / "index.html", ""), (site / "02_tensors" / "index.html", "../")):
        text = index.read_text(encoding="utf-8")
        for name, status, seconds in (("3_streams", "passed", "4.2 s"), ("lab_tensors", "failed", "1.5 s")):
            row = re.search(
                rf'<tr><td><a href="{prefix}02_tensors/{name}.html">{name}.ipynb</a>.*?</tr>', text, re.S
            )
            assert row, f"{index.name}: no row for {name}"
            assert f'<td class="{status}">{status}</td>' in row.group(0) and seconds in row.group(0)
        assert "ValueError: strides disagree" in text


def test_failed_notebook_page_shows_the_error(site: Path):
    page = (site / "02_tensors" / "lab_tensors.html").read_text(encoding="utf-8")
    banner = re.search(r'<div class="labs-failure">(.*?)</div>', page, re.S)
    assert (
        banner and "failed at cell 2" in banner.group(1) and "ValueError: strides disagree" in banner.group(1)
    )
    assert '<div class="labs-failure">' not in (site / "02_tensors" / "3_streams.html").read_text(
        encoding="utf-8"
    )


def test_a_notebook_without_executed_output_still_gets_a_page(tmp_path: Path):
    source = FIXTURES / "course" / "fx_basic" / "1_passes.ipynb"
    results = [
        NotebookResult(
            notebook=str(source),
            status="killed",
            seconds=3.25,
            output=str(tmp_path / "gone.ipynb"),
            cell=4,
            error="kernel died (out of memory?)",
        ),
        NotebookResult(
            notebook="elsewhere/fx_basic/index.ipynb",
            status="timeout",
            seconds=600.0,
            output=str(tmp_path / "missing.ipynb"),
            error="timed out after 600 s",
        ),
    ]
    index = render_site(results, tmp_path)
    assert index == tmp_path.resolve() / "site" / "index.html"
    page = (tmp_path / "site" / "fx_basic" / "1_passes.html").read_text(encoding="utf-8")
    assert "<strong>killed at cell 4</strong> after 3.2 s" in page
    assert "kernel died (out of memory?)" in page and "A passing lesson" in page  # the source, unexecuted
    unreadable = (tmp_path / "site" / "fx_basic" / "index_2.html").read_text(encoding="utf-8")
    assert "timed out after 600 s" in unreadable and "could be read" in unreadable
    chapter = (tmp_path / "site" / "fx_basic" / "index.html").read_text(encoding="utf-8")
    assert '<td class="killed">killed</td>' in chapter and '<td class="timeout">timeout</td>' in chapter
    assert 'href="../fx_basic/index_2.html"' in chapter  # a notebook called index does not replace the index


@pytest.mark.slow
def test_labs_run_html_builds_the_site_from_the_executed_notebooks(tmp_path: Path):
    result = labs(
        "run",
        str(FIXTURES / "course"),
        str(RAISES),
        "--smoke",
        "--device",
        "cpu",
        "--html",
        "--report",
        str(tmp_path),
        "--jobs",
        "2",
    )
    assert result.returncode == 1, result.stdout + result.stderr  # the raising notebook fails on purpose
    assert f"static course: {tmp_path.resolve() / 'site' / 'index.html'}" in result.stdout.replace("\n", "")
    site = tmp_path / "site"
    for page in ("fx_basic/1_passes.html", "fx_basic/lab_basic.html", "raises/1_raises.html"):
        assert (site / page).is_file(), page
    raises = (site / "raises" / "1_raises.html").read_text(encoding="utf-8")
    assert "failed at cell 2" in raises and raises.count("this notebook fails on purpose") >= 2
    executed = nbformat.read(next((tmp_path / "notebooks").rglob("1_passes.ipynb")), as_version=4)
    outputs = [o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    printed = next(line for text in outputs for line in text.splitlines() if line.strip())
    assert printed in (site / "fx_basic" / "1_passes.html").read_text(encoding="utf-8")  # as it ran


def test_inline_svg_drops_the_xml_prolog():
    svg = (
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
        '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"\n'
        ' "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<!-- Generated by graphviz -->\n'
        '<svg width="8pt" height="8pt"><g/></svg>\n'
    )
    assert inline_svg(svg) == '<svg width="8pt" height="8pt"><g/></svg>\n'
    assert inline_svg("<svg/>") == "<svg/>"


def test_svg_hook_leaves_other_images_and_bad_data_alone():
    png = '<div class="jp-RenderedImage"><img src="data:image/png;base64,AAAA"></div>'
    bad = '<div class="jp-RenderedSVG"><img src="data:image/svg+xml;base64,@@@"></div>'
    assert on_page_content(png + bad) == png + bad
