"""MkDocs hooks of the static course, loaded by MkDocs from this file (``hooks:`` in the generated mkdocs.yml).

nbconvert draws an SVG output as an ``<img>`` of a data URI; the hook puts the SVG itself in the page
instead, so its text and links are part of the page. mkdocs-jupyter loads MathJax with a blocking
``<script>``; the hook makes it ``async``, so a reader offline (the CDN unreachable) never waits for it.
"""

from __future__ import annotations

import base64
import binascii
import re

_XML_PROLOG = re.compile(r"\A\s*(<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*|<!--.*?-->\s*)*", re.S)
_MATHJAX = re.compile(r'<script src="(https://[^"]*/mathjax/[^"]*)">')
_SVG_IMG = re.compile(r'(<div class="jp-RenderedSVG[^>]*>\s*)<img [^>]*src="data:image/svg\+xml;base64,([^"]+)"[^>]*>')


def inline_svg(svg: str) -> str:
    """An SVG document as an element to place in HTML: XML prolog, DOCTYPE and leading comments removed."""
    return _XML_PROLOG.sub("", svg, count=1)


def on_page_content(content: str, **_: object) -> str:
    """MkDocs event: SVG outputs inline (one that does not decode stays an ``<img>``), MathJax async."""
    def inline(match: re.Match) -> str:
        try:
            return match.group(1) + inline_svg(base64.b64decode(match.group(2), validate=True).decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError):
            return match.group(0)
    return _MATHJAX.sub(r'<script async src="\1">', _SVG_IMG.sub(inline, content))
