"""MkDocs hooks of the static course, loaded by MkDocs from this file (``hooks:`` in the generated mkdocs.yml).

nbconvert draws an SVG output as an ``<img>`` of a data URI; the hook puts the SVG itself in the page
instead, so its text and links are part of the page. mkdocs-jupyter loads MathJax with a blocking
``<script>``; the hook makes it ``async``, so a reader offline (the CDN unreachable) never waits for it.
mkdocs-jupyter also pastes JupyterLab's stylesheets (about 0.6 MB) into every notebook page; the hook
writes each distinct one once, to ``assets/labs/``, and links it instead.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from pathlib import Path

_XML_PROLOG = re.compile(r"\A\s*(<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*|<!--.*?-->\s*)*", re.S)
_STYLE = re.compile(r'<style type="text/css">(.*?)</style>', re.S)
SHARED_MIN = 10_000  # characters: only the big, pasted stylesheets move out of the page
CSS_DIR = "assets/labs"
_MATHJAX = re.compile(r'<script src="(https://[^"]*/mathjax/[^"]*)">')
_SVG_IMG = re.compile(
    r'(<div class="jp-RenderedSVG[^>]*>\s*)<img [^>]*src="data:image/svg\+xml;base64,([^"]+)"[^>]*>'
)


def inline_svg(svg: str) -> str:
    """An SVG document as an element to place in HTML: XML prolog, DOCTYPE and leading comments removed."""
    return _XML_PROLOG.sub("", svg, count=1)


def shared_styles(content: str, site_dir: Path, page_url: str) -> str:
    """Each large ``<style>`` of ``content`` written once under ``site_dir``, and linked from the page."""
    up = "../" * page_url.count("/")

    def link(match: re.Match) -> str:
        css = match.group(1)
        if len(css) < SHARED_MIN:
            return match.group(0)
        name = f"{CSS_DIR}/notebook-{hashlib.sha256(css.encode()).hexdigest()[:16]}.css"
        target = site_dir / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(css, encoding="utf-8")
        return f'<link rel="stylesheet" href="{up}{name}">'

    return _STYLE.sub(link, content)


def _inline(match: re.Match) -> str:
    try:
        return match.group(1) + inline_svg(base64.b64decode(match.group(2), validate=True).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError):
        return match.group(0)


def on_page_content(content: str, page=None, config=None, **_: object) -> str:
    """MkDocs event: SVG outputs inline (one that does not decode stays an ``<img>``), MathJax async,
    JupyterLab's stylesheets shared between pages (given the page and config)."""
    if page is not None and config is not None:
        content = shared_styles(content, Path(config["site_dir"]), page.url)
    return _MATHJAX.sub(r'<script async src="\1">', _SVG_IMG.sub(_inline, content))
