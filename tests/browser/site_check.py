"""Open the static course (``labs run --html``) in Chromium, offline from file://, and check it.

As a command, after ``labs run ... --html --report build/report``::

    python -m tests.browser.site_check build/report/site/index.html [--shots build/report/browser/site]
        [--search all_reduce --found-in 04_distributed]

exits 1 and names the page when a picture output is missing, an image is broken, a link leads nowhere,
or the site's search box finds no page of chapter ``--found-in`` for ``--search``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tests.browser import chromium

IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")

# Every picture output of the page (nbconvert's PNG/JPEG and SVG output areas) must hold a picture that
# the browser decoded (an <img> with naturalWidth > 0) or laid out (an inline <svg> with a size).
PICTURES_JS = """() => {
  const outputs = [...document.querySelectorAll('.jp-RenderedImage, .jp-RenderedSVG')];
  const missing = [];
  for (const [i, out] of outputs.entries()) {
    const img = out.querySelector('img');
    const svg = out.querySelector('svg');
    if (img) {
      if (!(img.complete && img.naturalWidth > 0)) missing.push(`output ${i}: image not decoded`);
    } else if (svg) {
      const box = svg.getBoundingClientRect();
      if (!(box.width > 0 && box.height > 0)) missing.push(`output ${i}: svg has no size`);
    } else {
      missing.push(`output ${i}: empty`);
    }
  }
  const broken = [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
    .map(i => i.src.slice(0, 80));
  const external = [...document.images].map(i => i.src)
    .filter(s => !s.startsWith('data:') && !s.startsWith('file:'));
  return {pictures: outputs.length, images: document.images.length,
          svgs: document.querySelectorAll('.jp-RenderedSVG svg').length, missing, broken, external};
}"""

# Links in the page's content (not Material's navigation, which repeats every page on every page).
LINKS_JS = """() => [...document.querySelectorAll('article a[href]')].map(a => a.getAttribute('href'))
  .filter(h => !h.startsWith('#') && !/^[a-z]+:/.test(h))"""

SEARCH_INPUT = "input.md-search__input"
SEARCH_RESULT = ".md-search-result__item a"


@dataclass
class PageCheck:
    """What Chromium found on one notebook page."""

    url: str
    pictures: int
    images: int
    svgs: int
    problems: list[str] = field(default_factory=list)


@dataclass
class SiteCheck:
    """Every page reached from the index, and what was wrong."""

    chapters: list[str] = field(default_factory=list)
    pages: list[PageCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    search_hits: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and all(not p.problems for p in self.pages)

    def describe(self) -> str:
        lines = [
            f"{len(self.chapters)} chapters, {len(self.pages)} notebook pages, "
            f"{sum(p.pictures for p in self.pages)} pictures, {len(self.search_hits)} search results",
            *self.problems,
        ]
        lines += [f"{p.url}: {problem}" for p in self.pages for problem in p.problems]
        return "\n".join(lines)


def _links(page) -> list[str]:
    return page.evaluate(LINKS_JS)


def _check_notebook_page(page, url: str, shots: Path | None) -> PageCheck:
    response = page.goto(url, wait_until="load")
    found = page.evaluate(PICTURES_JS)
    check = PageCheck(url, found["pictures"], found["images"], found["svgs"])
    if response is not None and not response.ok:
        check.problems.append(f"could not be opened ({response.status})")
    check.problems += found["missing"]
    check.problems += [f"broken image {src}" for src in found["broken"]]
    check.problems += [f"image loaded from outside the page: {src}" for src in found["external"]]
    if shots is not None:
        first = page.locator(".jp-RenderedImage, .jp-RenderedSVG").first
        if found["pictures"]:
            first.scroll_into_view_if_needed()
        parts = Path(url).parts
        page.screenshot(path=str(shots / f"{parts[-2]}__{Path(parts[-1]).stem}.png"))
    return check


def expected_pictures(report_json: Path) -> dict[str, int]:
    """``chapter/stem`` -> number of image outputs in the executed notebook recorded in ``report.json``."""
    expected = {}
    for record in json.loads(report_json.read_text())["notebooks"]:
        try:
            nb = nbformat.read(record["output"], as_version=4)
        except (OSError, ValueError):
            continue
        source = Path(record["notebook"])
        expected[f"{source.parent.name}/{source.stem}"] = sum(
            any(kind in output.get("data", {}) for kind in IMAGE_TYPES)
            for cell in nb.cells
            if cell.cell_type == "code"
            for output in cell.get("outputs", [])
        )
    return expected


def search(page, term: str, timeout_ms: float = 15_000) -> list[str]:
    """Type ``term`` into the site's search box (on the page open in ``page``); the result links."""
    page.click(SEARCH_INPUT)
    page.keyboard.type(term)
    try:
        page.wait_for_selector(SEARCH_RESULT, timeout=timeout_ms)
    except Exception:  # noqa: BLE001 - Playwright's TimeoutError: no result is the finding
        return []
    return page.eval_on_selector_all(SEARCH_RESULT, "els => els.map(a => a.getAttribute('href'))")


def _check_search(page, index_url: str, term: str, chapter: str, result: SiteCheck) -> None:
    page.goto(index_url, wait_until="load")
    result.search_hits = search(page, term)
    if not any(f"/{chapter}/" in href for href in result.search_hits):
        result.problems.append(f"search for {term!r} found no page of {chapter}: {result.search_hits[:5]}")


def check_site(
    instance, index: Path, shots: Path | None = None, term: str | None = None, chapter: str = "04_distributed"
) -> SiteCheck:
    """Walk index -> chapter pages -> notebook pages in ``instance`` (a Playwright Browser), offline.

    When the site sits in a `labs run` report folder, each page must show as many pictures as its
    executed notebook has image outputs. With a ``term``, the site's search must find it on a page of ``chapter``.
    """
    report_json = index.resolve().parent.parent / "report.json"
    expected = expected_pictures(report_json) if report_json.exists() else {}
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
    context = chromium.offline_context(instance)
    page = context.new_page()
    result = SiteCheck()
    try:
        index_url = index.resolve().as_uri()
        page.goto(index_url, wait_until="load")
        root = page.url.rsplit("/", 1)[0]
        chapter_urls = list(
            dict.fromkeys(f"{root}/{href}" for href in _links(page) if href.endswith("/index.html"))
        )
        if not chapter_urls:
            result.problems.append(f"{index}: no chapter links")
        for chapter_url in chapter_urls:
            response = page.goto(chapter_url, wait_until="load")
            if response is not None and not response.ok:
                result.problems.append(f"{chapter_url}: could not be opened")
                continue
            result.chapters.append(chapter_url)
            base = chapter_url.rsplit("/", 1)[0]
            notebook_urls = list(
                dict.fromkeys(
                    f"{base}/{href}"
                    for href in _links(page)
                    if href.endswith(".html") and not href.endswith("index.html")
                )
            )
            if not notebook_urls:
                result.problems.append(f"{chapter_url}: no notebook links")
            for url in notebook_urls:
                check = _check_notebook_page(page, _normalise(url), shots)
                key = "/".join(Path(check.url).parts[-2:]).removesuffix(".html")
                if key in expected and expected[key] != check.pictures:
                    check.problems.append(
                        f"{check.pictures} pictures on the page, {expected[key]} image "
                        "outputs in the executed notebook"
                    )
                result.pages.append(check)
        if term:
            _check_search(page, index_url, term, chapter, result)
    finally:
        context.close()
    return result


def _normalise(url: str) -> str:
    """Resolve ``..`` segments of a file:// URL (Chromium does too; this keeps report names tidy)."""
    prefix, _, path = url.partition("file://")
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            parts.pop()
        else:
            parts.append(part)
    return prefix + "file://" + "/".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Command line: check a built site, print what was found, exit 1 on any problem."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path, help="site/index.html written by labs run --html")
    parser.add_argument("--shots", type=Path, default=None, help="folder for a screenshot per notebook page")
    parser.add_argument("--search", default="all_reduce", help="a term the site's search must find")
    parser.add_argument("--found-in", default="04_distributed", help="the chapter search must find it in")
    args = parser.parse_args(argv)
    why = chromium.missing()
    if why:
        print(f"site check skipped: {why}")
        return 0
    if not args.index.exists():
        print(f"error: {args.index} does not exist (run labs run ... --html first)")
        return 2
    with chromium.browser() as instance:
        result = check_site(instance, args.index, args.shots, args.search, args.found_in)
    print(result.describe())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
