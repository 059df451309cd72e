"""Debian's Chromium driven by Playwright (Playwright's own browser download does not work here)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = Path(os.environ.get("LABS_CHROMIUM", "/usr/bin/chromium"))
INSTALL_HINT = "install it: apt-get install -y chromium chromium-driver"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 1000}
ONLINE = re.compile(r"^https?://")


def missing() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    if not CHROMIUM.exists():
        return f"Chromium not found at {CHROMIUM}: {INSTALL_HINT}"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python package playwright is missing: pip install -e '.[dev]'"
    return None


@contextmanager
def browser() -> Iterator:
    """A headless Chromium (Playwright Browser), closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            yield instance
        finally:
            instance.close()


def offline_context(instance):
    """A browser context whose requests to the internet fail at once (file:// pages only).

    Routed requests wait for Playwright's dispatcher, which only runs inside Playwright calls: do not
    use this context for a live server that is polled with plain sleeps (JupyterLab).
    """
    context = instance.new_context(viewport=VIEWPORT)
    context.route(ONLINE, lambda route: route.abort())
    return context
