"""A class on one machine holds: students walled off, limits per student, idle culling, no way in signed out.

One real `labs hub --class` (tests/browser/hub.py: unix users instructor, ada, ben and cy from a class list,
NativeAuthenticator with their one-time passwords, per-student cgroups, `--https` with a self-signed
certificate) driven over HTTPS and websockets (labs.hub.client) as each person's browser would, 127.0.0.1 only:

- ada, signed in, opens a terminal and a notebook and tries every way into ben's work, the course's sources and
  probes, the gradebook, the hub's state and other students' submissions, and submits as ben (her own nbgrader
  config edited, and nbgrader's command line): every attempt fails, ben's home and the gradebook are unchanged,
  and `labs collect` collects ben's own submission and refuses the forged one;
- ada's cell that allocates past her memory limit and her fork bomb are killed inside her cgroup (her kernel
  dies and her server says so), while ben's kernel finishes its cell;
- the hub speaks HTTPS with the certificate it was given (`--https`), and not plain HTTP;
- a one-time password opens only the change-password form: no server until it is changed, then it is dead;
- a signed-out visitor, a wrong password and ada after signing out reach no server;
- cy's idle server is stopped by the idle culler.

Afterwards tests/browser/hub.py removes the class whatever happened (accounts, groups, cgroups, folders) and
asserts so. Skips, saying why, when not root or without configurable-http-proxy.
"""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import re
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from labs.hub.client import HubSession
from labs.hub.limits import class_folders
from tests.browser.hub import RunningHub, hub_server, need_a_class, run_as
from tests.conftest import BIN

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.hub]

CHAPTER = "01_autograd"
PEOPLE = ("instructor", "ada", "ben", "cy")
CULL_IDLE = 30  # seconds: cy's server goes within about a minute
MEMORY_GIB = 1.5
PROCESSES = 160


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> RunningHub:
    need_a_class()
    with hub_server(
        tmp_path_factory.mktemp("class"),
        people=PEOPLE,
        options=(
            "--cull-idle",
            str(CULL_IDLE),
            "--memory",
            str(MEMORY_GIB),
            "--cpus",
            "1",
            "--processes",
            str(PROCESSES),
        ),
        https=True,
    ) as running:
        yield running


def run(coroutine):
    return asyncio.run(coroutine)


def instructor(hub: RunningHub, *args: str) -> str:
    """``labs ARGS`` as the instructor (their unix user); its output, the test failing on a non-zero exit."""
    result = run_as("instructor", [str(BIN / "labs"), *args, "--course", str(hub.course)])
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"labs {' '.join(args)}: {output}"
    return output


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` but hidden ones (a server's runtime files and caches), read as root, and a
    hash of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    }


async def signed_in(hub: RunningHub, name: str) -> HubSession:
    """``name`` signed in (their own password chosen, on their first sign-in) with their server up."""
    session = HubSession(hub.base, name, hub.passwords[name])
    assert await session.sign_in(), f"{name} could not sign in with {hub.passwords[name]!r}"
    if session.must_choose_password:
        hub.passwords[name] = await session.choose_password()
    await session.start_server()
    return session


BEN_NOTEBOOK = {
    "type": "notebook",
    "content": {
        "cells": [
            {
                "cell_type": "code",
                "source": "answer = 42  # ben's work",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 4,
    },
}


def test_ada_cannot_reach_ben_the_course_or_the_grades(hub: RunningHub):
    exchange = str(hub.exchange)
    out = instructor(
        hub,
        "release",
        CHAPTER,
        "--exchange",
        "--exchange-root",
        exchange,
        "--root",
        str(hub.grading),
        "--workspace",
        str(hub.home("instructor") / "student"),
    )
    assert f"released {CHAPTER}" in out, out

    async def ben_works() -> None:
        ben = await signed_in(hub, "ben")
        response = await ben.api("PUT", f"{ben.server}/api/contents/work.ipynb", json=BEN_NOTEBOOK)
        assert response.status_code in (200, 201), response.text
        assert (await ben.assignment("fetch", CHAPTER))["success"]
        assert (await ben.assignment("submit", CHAPTER))["success"]
        await ben.close()

    run(ben_works())
    out = instructor(hub, "collect", CHAPTER, "--root", str(hub.grading), "--exchange-root", exchange)
    assert "collected ben/01_autograd" in out and "refused" not in out, out
    ben_submitted = (hub.grading / "submitted" / "ben" / CHAPTER / "timestamp.txt").read_text()
    before = {"ben": digest(hub.home("ben")), "grading": digest(hub.grading)}
    assert "work.ipynb" in before["ben"] and "gradebook.db" in before["grading"], before

    ben_home, grading, course, state = hub.home("ben"), hub.grading, hub.course / CHAPTER, hub.root / "state"
    inbound = hub.exchange / "pytorch-labs" / "inbound"
    attempts = {  # what ada types in her terminal: each must fail
        "list ben's home": f"ls {ben_home}",
        "read ben's notebook": f"cat {ben_home}/work.ipynb",
        "write ben's notebook": f"echo '{{}}' > {ben_home}/work.ipynb",
        "plant a file in ben's home": f"touch {ben_home}/planted",
        "change ben's Jupyter config": f"echo 'c.X = 1' >> {hub.root}/config/ben/nbgrader_config.py",
        "read the lab's source": f"cat {course}/lab_autograd.ipynb",
        "list the probes": f"ls {course}/probes",
        "read a probe": f"cat {course}/probes/lab_autograd.py",
        "read the lab's source in the course root": f"cat {grading}/source/{CHAPTER}/lab_autograd.ipynb",
        "read the gradebook": f"cat {grading}/gradebook.db",
        "write the gradebook": f"echo x >> {grading}/gradebook.db",
        "list collected submissions": f"ls {grading}/submitted",
        "list the exchange's inbound": f"ls {inbound}",
        "read ben's submission by pattern": f"cat {inbound}/ben+*/lab_autograd.ipynb",
        "move the course in the exchange": f"mv {hub.exchange}/pytorch-labs {hub.exchange}/mine",
        "read the passwords": f"cat {state}/passwords.csv",
        "read the hub's database": f"cat {state}/jupyterhub.sqlite",
        "read the hub's log": f"cat {hub.root}/jupyterhub.log",
        "read ben's processes' environment": "cat /proc/$(pgrep -u ben -f jupyterhub-singleuser | head -1)/environ",
    }

    async def ada_attacks() -> dict[str, tuple[int, str]]:
        ada = await signed_in(hub, "ada")
        terminal = await ada.terminal()
        status, whoami = await terminal.run("id -un")
        assert (status, whoami.splitlines()[-1]) == (0, "ada"), whoami
        results = {what: await terminal.run(command) for what, command in attempts.items()}
        # the same from her notebook, as Python
        kernel = await ada.start_kernel()
        cell = await kernel.execute(f"open({str(ben_home / 'work.ipynb')!r}).read()")
        results["read ben's notebook from a kernel"] = (1 if cell.status == "error" else 0, cell.error)
        cell = await kernel.execute(f"open({str(grading / 'gradebook.db')!r}, 'ab').write(b'x')")
        results["write the gradebook from a kernel"] = (1 if cell.status == "error" else 0, cell.error)
        # the REST APIs of ben's server and the hub's, with ada's cookies
        for path in ("/user/ben/api/contents/work.ipynb", "/user/ben/api/kernels", "/hub/api/users/ben"):
            response = await ada.api("GET", path)
            results[f"GET {path}"] = (0 if response.status_code == 200 else 1, str(response.status_code))
        # submit as ben: her own nbgrader config names her ben, then the Assignments tab and the command line
        await terminal.run(
            "mkdir -p ~/.jupyter && echo \"c.CourseDirectory.student_id = 'ben'\" "
            ">> ~/.jupyter/nbgrader_config.py"
        )
        await ada.assignment("fetch", CHAPTER)
        forged = await ada.assignment("submit", CHAPTER)
        cli = await terminal.run(
            f"cd ~ && {BIN}/nbgrader submit {CHAPTER} --course pytorch-labs --CourseDirectory.student_id=ben"
        )
        terminal.close()
        await kernel.close()
        await ada.close()
        return results, forged, cli

    results, forged, cli = run(ada_attacks())
    succeeded = {what: out for what, (status, out) in results.items() if status == 0}
    assert not succeeded, f"ada got through: {succeeded}"
    denied = [
        what for what, (_, out) in results.items() if "Permission denied" in out or "PermissionError" in out
    ]
    assert len(denied) >= 15, f"failed, but not for want of permission: {results}"
    assert digest(hub.home("ben")) == before["ben"], "ben's home changed"
    assert digest(hub.grading) == before["grading"], "the gradebook or the collected submissions changed"

    # the forged submissions reached the exchange, named ben, owned by ada: collect refuses them
    assert forged["success"] and cli[0] == 0, (forged, cli)
    out = instructor(hub, "collect", CHAPTER, "--root", str(hub.grading), "--exchange-root", exchange)
    assert out.count("refused ben+01_autograd+") == 2 and "submitted by ada" in out, out
    assert (hub.grading / "submitted" / "ben" / CHAPTER / "timestamp.txt").read_text() == ben_submitted


def test_memory_hog_and_fork_bomb_die_inside_their_limit(hub: RunningHub):
    folders = class_folders(hub.class_name)

    async def scenario():
        ada, ben = await signed_in(hub, "ada"), await signed_in(hub, "ben")
        ada_kernel, ben_kernel = await ada.start_kernel(), await ben.start_kernel()
        ben_cell = "import time\nstart = time.time()\ntotal = sum(i * i for i in range(4_000_000))\nprint('ben done', total)"
        hog = "x = b'x' * (3 * 2**30)\nprint('allocated')"
        ben_first, hog_result = await asyncio.gather(ben_kernel.execute(ben_cell), ada_kernel.execute(hog))
        ada_kernel2 = await ada.start_kernel()
        bomb = (
            "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
            "        time.sleep(0.01)"
        )
        ben_second, bomb_result = await asyncio.gather(
            ben_kernel.execute(ben_cell, timeout=240), ada_kernel2.execute(bomb, timeout=120)
        )
        after = await ben_kernel.execute("print(total)")
        for session in (ada, ben):
            await session.close()
        return ben_first, hog_result, ben_second, bomb_result, after

    ben_first, hog, ben_second, bomb, after = run(scenario())
    assert hog.status == "died" and "allocated" not in hog.output, hog
    assert bomb.status == "died", bomb
    assert ben_first.status == "ok" and "ben done" in ben_first.output, ben_first
    assert ben_second.status == "ok" and "ben done" in ben_second.output, ben_second
    assert after.status == "ok", after  # ben's kernel lived through both
    ada = folders[0] / "ada"  # v1: the memory hierarchy's folder comes first; v2: the one folder
    events = (
        (ada / "memory.oom_control").read_text()
        if (ada / "memory.oom_control").exists()
        else (ada / "memory.events").read_text()
    )
    kills = re.search(r"^oom_kill (\d+)$", events, re.M)
    assert kills and int(kills.group(1)) >= 1, events  # the kernel's OOM killer, inside ada's group
    log = (hub.root / "jupyterhub.log").read_text()
    assert f"ada reached its limit of {PROCESSES} processes" in log, log[-3000:]


def test_a_one_time_password_only_lets_its_owner_choose_another(hub: RunningHub):
    """The instructor's first sign-in lands on the change-password form; no server starts until the password
    is changed; the one-time password is refused as the new one, and signs in no more once it is changed."""
    one_time = hub.passwords["instructor"]

    async def scenario():
        first = HubSession(hub.base, "instructor", one_time)
        signed = await first.sign_in()
        landed, asked = first.must_choose_password, (await first.client.get("/hub/spawn")).text
        running = (await first.api("GET", "/user/instructor/api/status")).status_code
        with pytest.raises(RuntimeError, match="refused the new password"):
            await first.choose_password(one_time)
        new = await first.choose_password()
        await first.sign_out()
        again = HubSession(hub.base, "instructor", one_time)
        refused = not await again.sign_in()
        chosen = HubSession(hub.base, "instructor", new)
        back = await chosen.sign_in() and not chosen.must_choose_password
        for session in (first, again, chosen):
            await session.close()
        hub.passwords["instructor"] = new
        return signed, landed, asked, running, refused, back

    signed, landed, asked, running, refused, back = run(scenario())
    assert signed and landed, "a one-time password did not lead to the change-password form"
    assert "choose your own password first" in asked, re.sub(
        r"(?s)<script.*?</script>|<[^>]+>|\s+", " ", asked
    )[:3000]
    assert running != 200, "a server answered before the one-time password was changed"
    assert refused, "the one-time password still signs in after it was changed"
    assert back, "the chosen password does not sign in"


def test_the_hub_speaks_only_https_with_its_certificate(hub: RunningHub):
    """`labs hub --https CERT KEY`: the hub's port serves that certificate, and plain HTTP gets no page."""
    served = ssl.get_server_certificate(("127.0.0.1", hub.port))
    assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(hub.certificate.read_text())
    with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
        urllib.request.urlopen(f"http://127.0.0.1:{hub.port}/hub/login", timeout=10).read()


def test_signed_out_reaches_no_server(hub: RunningHub):
    async def scenario():
        ada = await signed_in(hub, "ada")
        assert (await ada.api("GET", f"{ada.server}/api/contents")).status_code == 200
        stranger = HubSession(hub.base, "ada", "not her password")
        wrong = await stranger.sign_in()
        anonymous = [
            (await stranger.api("GET", path)).status_code
            for path in ("/user/ada/api/contents", "/user/ben/api/contents", "/hub/api/users")
        ]
        await ada.sign_out()
        after = [
            (await ada.api("GET", path)).status_code for path in ("/user/ada/api/contents", "/hub/api/user")
        ]
        for session in (ada, stranger):
            await session.close()
        return wrong, anonymous, after

    wrong, anonymous, after = run(scenario())
    assert not wrong, "a wrong password signed in"
    assert all(code != 200 for code in anonymous), anonymous
    assert all(code != 200 for code in after), after


def test_idle_server_is_culled(hub: RunningHub):
    async def start_cy() -> None:
        cy = await signed_in(hub, "cy")
        await cy.close()

    run(start_cy())
    servers = [
        p
        for p in psutil.process_iter(["username", "cmdline"])
        if p.info["username"] == "cy" and "jupyterhub-singleuser" in " ".join(p.info["cmdline"] or [])
    ]
    assert servers, "cy's server is not running"
    deadline = time.monotonic() + CULL_IDLE * 4 + 60
    while time.monotonic() < deadline and any(p.is_running() for p in servers):
        time.sleep(2)
    assert not any(p.is_running() for p in servers), "cy's idle server still runs"
    assert "Culling server cy" in (hub.root / "jupyterhub.log").read_text()
