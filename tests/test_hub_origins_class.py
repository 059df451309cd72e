"""Issue 48, item 1 (a link that takes over an account), against a real `labs hub --class` with its default on
127.0.0.1: each person's server on an origin of its own, ``http://<name>.localhost:PORT`` (JupyterHub's
``subdomain_host``), the hub's at ``http://localhost:PORT``. Headless Chromium, which resolves every ``*.localhost``
to this machine (glibc here does not: the other hub tests run with ``--subdomain-host off``).

ben signs in; in his browser a page of ada's, served from her server's origin (``http://ada.localhost:PORT/user/ada/
...``, put there with Playwright's route: what her kernel could serve by replacing her server's process), runs a
script that fetches ben's hub token page for its XSRF token, asks the hub's API for a new token of ben's, and reads
ben's files from his server (with the XSRF token of the page's cookies). Every part fails and ben has no new token. The control: the same script from a page
under the hub's own origin (where every server was before) makes the token, and from ben's origin reads his files,
so the test fails if the origins stop being separate.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import chromium
from tests.browser.hub import LAB_SHELL, RunningHub, hub_server, need_a_class

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.hub]

NOTE = "made-by-ada"
ATTACK = """
async function attack(hub, benServer, note) {
  const out = {};
  try {
    const page = await (await fetch(hub + "/hub/token", {credentials: "include"})).text();
    const found = page.match(/xsrf_token["']?\\s*:\\s*["']([^"']+)["']/);
    out.xsrf = found ? "read" : "not in the page";
    const made = await fetch(hub + "/hub/api/users/ben/tokens", {
      method: "POST", credentials: "include",
      headers: {"Content-Type": "application/json", "X-XSRFToken": found ? found[1] : ""},
      body: JSON.stringify({note: note, expires_in: 600})});
    out.token = made.status + " " + (await made.text()).slice(0, 300);
  } catch (err) {
    out.token = "refused: " + err;
  }
  try {  // no CORS needed to send this one (its answer is opaque): it carries no XSRF token
    await fetch(hub + "/hub/api/users/ben/tokens", {method: "POST", mode: "no-cors", credentials: "include",
      headers: {"Content-Type": "text/plain"}, body: JSON.stringify({note: note + "-blind", expires_in: 600})});
    out.blind = "sent";
  } catch (err) {
    out.blind = "refused: " + err;
  }
  try {  // with the XSRF cookie a page of this origin may read (JupyterHub wants it on an API call with cookies)
    const xsrf = document.cookie.split("; ").find(c => c.startsWith("_xsrf="));
    const files = await fetch(benServer + "/user/ben/api/contents", {credentials: "include",
      headers: {"X-XSRFToken": xsrf ? xsrf.slice(6) : ""}});
    out.files = files.status + " " + (await files.text()).slice(0, 300);
  } catch (err) {
    out.files = "refused: " + err;
  }
  return out;
}
"""


def evil_page(hub: str, ben_server: str, note: str) -> str:
    """ada's page: runs the attack when it loads, its findings in ``window.found``."""
    args = ", ".join(json.dumps(a) for a in (hub, ben_server, note))
    return (
        f"<!doctype html><html><body><p>ada's notes</p><script>{ATTACK}\n"
        f"attack({args}).then(out => {{ window.found = out; }});</script></body></html>"
    )


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Iterator[RunningHub]:
    need_a_class(browser=True)
    with hub_server(
        tmp_path_factory.mktemp("origins"),
        people=("instructor", "ada", "ben"),
        subdomains=True,
        options=("--cull-idle", "0"),
    ) as running:
        yield running


def sign_in(context, hub: RunningHub, name: str):
    """``name`` signs in at the hub's public address (choosing a password on a first sign-in) and their JupyterLab
    opens on their own origin; returns the page."""
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{hub.public}/hub/login")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", hub.passwords[name])
    page.click("[type=submit]")
    page.wait_for_load_state()
    if page.url.endswith("/hub/change-password"):
        chosen = secrets.token_urlsafe(12)
        page.fill("input[name=old_password]", hub.passwords[name])
        page.fill("input[name=new_password]", chosen)
        page.fill("input[name=new_password_confirmation]", chosen)
        page.click("[type=submit]")
        page.get_by_text("changed successfully").wait_for()
        hub.passwords[name] = chosen
        page.goto(f"{hub.public}/hub/spawn")
    page.wait_for_selector(LAB_SHELL, timeout=300_000)
    assert page.url.startswith(f"{hub.origin(name)}/user/{name}/lab"), page.url
    return page


def served_by_ada(context, url: str, html: str):
    """Open ``url`` in the context, its answer ``html`` (Playwright's route, as if a server sent it); returns what
    the page's script found."""
    context.route(url, lambda route: route.fulfill(status=200, content_type="text/html", body=html))
    page = context.new_page()
    page.goto(url)
    page.wait_for_function("window.found !== undefined", timeout=60_000)
    found = page.evaluate("window.found")
    page.close()
    context.unroute(url)
    return found


def ben_tokens(page, hub: RunningHub) -> list[str]:
    """The notes of ben's API tokens, as his own hub page reads them (same origin, his XSRF token)."""
    page.goto(f"{hub.public}/hub/token")
    return page.evaluate("""async () => {
        const xsrf = document.cookie.split("; ").find(c => c.startsWith("_xsrf="));
        const r = await fetch("/hub/api/users/ben/tokens", {headers: {"X-XSRFToken": xsrf ? xsrf.slice(6) : ""}});
        return (await r.json()).api_tokens.map(t => t.note || "");
    }""")


def test_a_page_of_a_students_server_cannot_script_the_hub_or_a_classmate(hub: RunningHub, tmp_path: Path):
    """Issue 48, item 1: from ada's origin the script gets no token of ben's and none of his files; from the hub's
    origin it gets the token, from ben's his files."""
    with chromium.browser() as instance:
        context = instance.new_context(viewport=chromium.VIEWPORT)
        ben = sign_in(context, hub, "ben")
        assert not [n for n in ben_tokens(ben, hub) if n.startswith(NOTE)]

        ada_origin = hub.origin("ada")
        attack = served_by_ada(
            context, f"{ada_origin}/user/ada/notes.html", evil_page(hub.public, hub.origin("ben"), NOTE)
        )
        after_attack = ben_tokens(ben, hub)

        control = served_by_ada(
            context,
            f"{hub.public}/user/ada/notes.html",
            evil_page(hub.public, hub.origin("ben"), NOTE + "-control"),
        )
        after_control = ben_tokens(ben, hub)
        own_origin = served_by_ada(
            context,
            f"{hub.origin('ben')}/user/ben/notes.html",
            evil_page(hub.public, hub.origin("ben"), NOTE + "-ben-origin"),
        )
        ben.screenshot(path=str(tmp_path / "ben_tokens.png"))
        context.close()

    assert ada_origin != hub.public and ada_origin != hub.origin("ben"), ada_origin
    # from ada's origin: the hub's pages and API and ben's server answer her script nothing, and make nothing
    assert attack["token"].startswith("refused: TypeError"), attack
    assert attack["files"].startswith("refused: TypeError"), attack
    assert not [n for n in after_attack if n.startswith(NOTE)], after_attack
    # control: the same script under the hub's origin makes ben a token; under ben's it reads his files
    assert control["xsrf"] == "read" and control["token"].startswith("201 "), control
    assert NOTE + "-control" in after_control, after_control
    assert not [n for n in after_control if n.endswith("-blind")], after_control  # no XSRF token: refused
    assert own_origin["files"].startswith("200 ") and re.search(
        r'"type": ?"directory"', own_origin["files"]
    ), own_origin
