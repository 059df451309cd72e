"""The static course (`labs run --html`): a page per notebook, an index per chapter, pictures inside pages."""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from ci.html import inline_svg, render_site
from ci.runner import NotebookResult
from tests.conftest import FIXTURES, ROOT, labs

PICTURES = ROOT / "tests" / "browser" / "fixtures" / "fx_pictures"
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


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `labs run --html` over a picture notebook, the fixture course and a failing notebook."""
    report = tmp_path_factory.mktemp("report")
    result = labs("run", str(PICTURES), str(FIXTURES / "course"), str(RAISES), "--smoke", "--device", "cpu",
                  "--html", "--report", str(report), "--jobs", "2")
    assert result.returncode == 1, result.stdout + result.stderr  # the raising notebook fails on purpose
    printed = result.stdout.replace("\n", "")
    assert f"static course: {report / 'site' / 'index.html'}" in printed, result.stdout
    return report


@pytest.mark.slow
def test_every_link_resolves_and_every_notebook_has_a_page(site: Path):
    root = site / "site"
    pages = sorted(root.rglob("*.html"))
    expected = {"index.html", "fx_pictures/index.html", "fx_pictures/1_pictures.html", "fx_basic/index.html",
                "fx_basic/1_passes.html", "fx_basic/lab_basic.html", "raises/index.html",
                "raises/1_raises.html"}
    assert {p.relative_to(root).as_posix() for p in pages} == expected
    linked: set[Path] = set()
    for page in pages:
        for tag, attrs in _tags(page):
            href = attrs.get("href") if tag == "a" else None
            if not href or href.startswith("#") or re.match(r"^[a-z]+:", href):
                continue
            target = (page.parent / href).resolve()
            assert target.is_file(), f"{page.relative_to(root)} links to {href}, which does not exist"
            linked.add(target)
    assert linked >= {p.resolve() for p in pages if p.name != "index.html" or p.parent != root}


@pytest.mark.slow
def test_index_shows_status_and_time_per_notebook(site: Path):
    report = json.loads((site / "report.json").read_text())
    index = (site / "site" / "index.html").read_text()
    for record in report["notebooks"]:
        chapter, name = Path(record["notebook"]).parent.name, Path(record["notebook"]).name
        link = f'<a href="{chapter}/{Path(name).stem}.html">{re.escape(name)}</a>'
        row = re.search(rf"<tr><td>{link}.*?</tr>", index)
        assert row, f"no row for {record['notebook']}"
        assert f'<td class="{record["status"]}">{record["status"]}</td>' in row.group(0)
        assert f"{record['seconds']:.1f} s" in row.group(0)
    assert "1 failed" in index
    chapter_index = (site / "site" / "raises" / "index.html").read_text()
    assert '<td class="failed">failed</td>' in chapter_index
    assert "ValueError: this notebook fails on purpose" in chapter_index


@pytest.mark.slow
def test_image_outputs_are_embedded_in_the_page(site: Path):
    executed = next((site / "notebooks").rglob("1_pictures.ipynb"))
    nb = nbformat.read(executed, as_version=4)
    pngs = [o.data["image/png"] for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if "image/png" in o.get("data", {})]
    svgs = [o.data["image/svg+xml"] for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if "image/svg+xml" in o.get("data", {})]
    assert pngs and svgs, "the picture fixture should draw a PNG (strides.show) and an SVG"
    page = (site / "site" / "fx_pictures" / "1_pictures.html").read_text(encoding="utf-8")
    for png in pngs:  # the very bytes the kernel produced, as a data URI
        assert f'src="data:image/png;base64,{png.strip()}' in page.replace("\n", "")
        assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
    svg_outputs = re.findall(r'<div class="jp-RenderedSVG[^>]*>\s*(.*?)\s*</div>', page, re.S)
    assert len(svg_outputs) == len(svgs)
    for html_svg in svg_outputs:  # inline, not an <img> and not a document inside the document
        assert html_svg.startswith("<svg") and "<?xml" not in html_svg and "<!DOCTYPE" not in html_svg
    assert any('fill="#4c72b0"' in svg for svg in svg_outputs)  # the explicit SVG output, drawn inline
    tags = _tags(site / "site" / "fx_pictures" / "1_pictures.html")
    images = [attrs for tag, attrs in tags if tag == "img"]
    assert images and all((attrs.get("src") or "").startswith("data:image/") for attrs in images)


@pytest.mark.slow
def test_pages_need_no_script_to_show_pictures(site: Path):
    for page in (site / "site").rglob("*.html"):
        for tag, attrs in _tags(page):
            src = attrs.get("src") or ""
            if tag == "script" and src:  # only MathJax comes from a CDN, and it never blocks the page
                assert "mathjax" in src and "async" in attrs, f"{page.name}: blocking script {src}"
            if tag in ("img", "link", "iframe") and re.match(r"^https?:", src or attrs.get("href") or ""):
                raise AssertionError(f"{page.name}: {tag} fetched from the internet: {attrs}")


@pytest.mark.slow
def test_failed_notebook_page_shows_the_error(site: Path):
    page = (site / "site" / "raises" / "1_raises.html").read_text(encoding="utf-8")
    banner = re.search(r'<div class="labs-failure">(.*?)</div>', page, re.S)
    assert banner and "failed at cell 2" in banner.group(1)
    assert "ValueError: this notebook fails on purpose" in banner.group(1)
    assert page.count("this notebook fails on purpose") >= 2  # the banner and the traceback in the cell
    assert '<div class="labs-failure">' not in (site / "site" / "fx_basic" / "1_passes.html").read_text()


def test_a_notebook_without_executed_output_still_gets_a_page(tmp_path: Path):
    source = FIXTURES / "course" / "fx_basic" / "1_passes.ipynb"
    results = [NotebookResult(notebook=str(source), status="killed", seconds=3.25,
                              output=str(tmp_path / "gone.ipynb"), cell=4,
                              error="kernel died (out of memory?)"),
               NotebookResult(notebook="elsewhere/fx_basic/index.ipynb", status="timeout", seconds=600.0,
                              output=str(tmp_path / "missing.ipynb"), error="timed out after 600 s")]
    index = render_site(results, tmp_path)
    assert index == tmp_path / "site" / "index.html"
    page = (tmp_path / "site" / "fx_basic" / "1_passes.html").read_text(encoding="utf-8")
    assert "<strong>killed at cell 4</strong> after 3.2 s" in page
    assert "kernel died (out of memory?)" in page and "A passing lesson" in page  # the source, unexecuted
    unreadable = (tmp_path / "site" / "fx_basic" / "index_2.html").read_text(encoding="utf-8")
    assert "timed out after 600 s" in unreadable and "could be read" in unreadable
    chapter = (tmp_path / "site" / "fx_basic" / "index.html").read_text()
    assert '<td class="killed">killed</td>' in chapter and '<td class="timeout">timeout</td>' in chapter
    assert 'href="../fx_basic/index_2.html"' in chapter  # a notebook called index does not replace the index


def test_inline_svg_drops_the_xml_prolog():
    svg = ('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
           '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"\n'
           ' "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<!-- Generated by graphviz -->\n'
           '<svg width="8pt" height="8pt"><g/></svg>\n')
    assert inline_svg(svg) == '<svg width="8pt" height="8pt"><g/></svg>\n'
    assert inline_svg("<svg/>") == "<svg/>"
