"""Issue 48's attacks, each performed from a student's account on a real `labs hub --class`, each failing.

One class (tests/browser/hub.py: unix users instructor, ada, ben, dee, eve and fay, NativeAuthenticator,
per-student cgroups; dee, eve and fay only sign in), driven over HTTP and websockets as each person's browser would (labs.hub.client), 127.0.0.1 only:

1. ada's own Jupyter config (a header on every page, framing allowed) and a ``.pth`` in her user site do not reach
   her server; the hub's and her server's pages may be framed by nothing; the instructor cannot open her server;
2. what ada plants in /tmp (a classmate's ``/tmp/torchinductor_<name>``) is not in ben's /tmp, nor is his in hers:
   each server has its own;
3, 4, 7a. a notebook that is a link to the instructor's source, a later "ben" submission that is a link to a
   folder ben owns, a malformed name: `labs collect` (as the instructor) exits 0, names each, collects ada's and
   ben's own work, and no solution reaches the gradebook's folder;
7b. the exchange's course folder is the instructor's before any release: ada can neither take nor move it;
5. no file ada can read (all of / but the system's folders) holds a line of any lab's solutions or hidden
   tests;
6. ada, subscribing to and pushing into every TCP port ben's uid listens on, hears nothing of his kernel's
   output while he prints and puts nothing into it (his kernel's channels are unix sockets);
7. a student's file stops at the file-size limit (EFBIG) and her /tmp at its size (ENOSPC), and she cannot raise
   either, while ben's kernel answers; her home full (ENOSPC, at its size) fails her own saves only, and the
   exchange full stops at its size, while ben saves a notebook and the hub answers;
8. after 30 wrong passwords the right one is refused too; 8 wrong passwords at once, and 8 change-password forms
   at once, leave the hub answering others (the bcrypt checks run off its event loop).

Afterwards tests/browser/hub.py removes the class whatever happened. Skips, saying why, when not root or without
configurable-http-proxy (fails instead under --require=hub).
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import time

import psutil
import pytest

from labs.hub.client import HubSession
from labs.hub.plan import CHECKOUT
from tests.browser.hub import RunningHub, hub_server, need_a_class, run_as
from tests.conftest import BIN

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.hub]

CHAPTER = "01_autograd"
LAB = "lab_autograd.ipynb"
PEOPLE = ("instructor", "ada", "ben", "dee", "eve", "fay")
MEMORY_GIB = 1.5
FILE_BYTES = 1 << 30  # labs hub's default file-size limit for a student
TMP_BYTES = int(MEMORY_GIB * (1 << 30)) // 4  # labs hub's private /tmp: a quarter of the memory limit
DISK_BYTES = 256 << 20  # each student's home (--disk 0.25)
EXCHANGE_BYTES = 256 << 20  # the exchange: 32 MiB a person, at least 256 MiB


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> RunningHub:
    need_a_class()
    with hub_server(
        tmp_path_factory.mktemp("walls"),
        people=PEOPLE,
        options=(
            "--cull-idle",
            "0",
            "--memory",
            str(MEMORY_GIB),
            "--processes",
            "160",
            "--disk",
            str(DISK_BYTES / (1 << 30)),
        ),
    ) as running:
        yield running


def run(coroutine):
    return asyncio.run(coroutine)


async def signed_in(hub: RunningHub, name: str, server: bool = True) -> HubSession:
    """``name`` signed in (their own password chosen on the first sign-in), their server up when ``server``."""
    session = HubSession(hub.base, name, hub.passwords[name])
    assert await session.sign_in(), f"{name} could not sign in"
    if session.must_choose_password:
        hub.passwords[name] = await session.choose_password()
    if server:
        await session.start_server()
    return session


def instructor(hub: RunningHub, *args: str) -> str:
    result = run_as("instructor", [str(BIN / "labs"), *args, "--course", str(hub.course)])
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"labs {' '.join(args)} exited {result.returncode}: {output}"
    return output


def solution_lines(hub: RunningHub) -> list[str]:
    """Lines of the chapter's solutions and hidden tests (between nbgrader's markers) in the source lab that its
    release (what students get, from `labs release`) does not hold."""
    released = (hub.grading / "release" / CHAPTER / LAB).read_text()
    cells = json.loads((hub.course / CHAPTER / LAB).read_text())["cells"]
    lines, inside = [], False
    for cell in cells:
        for line in "".join(cell["source"]).splitlines():
            if line.strip().startswith("### BEGIN"):
                inside = True
            elif line.strip().startswith("### END"):
                inside = False
            elif inside and len(line.strip()) > 12 and json.dumps(line.strip())[1:-1] not in released:
                lines.append(line.strip())
    assert lines, "the source lab holds no solution"
    return lines


async def restart_server(session: HubSession) -> None:
    """Stop the person's server through the hub's API and start it again."""
    response = await session.api("DELETE", f"/hub/api/users/{session.name}/server")
    assert response.status_code in (202, 204), response.text
    for _ in range(120):
        model = (await session.api("GET", f"/hub/api/users/{session.name}")).json()
        if not model.get("servers"):
            break
        await asyncio.sleep(0.5)
    await session.start_server()


def test_own_config_never_reaches_the_server_and_no_page_may_be_framed(hub: RunningHub):
    """Issue 48, item 1: ada's ~/.jupyter config and a .pth in her user site are ignored by her server; the hub's
    and her server's pages forbid framing; the instructor (no hub admin) cannot open her server, by cookie or by
    a token made for it."""
    marker = hub.home("ada") / "pth-ran"

    async def scenario():
        ada = await signed_in(hub, "ada")
        terminal = await ada.terminal()
        for command in (
            "mkdir -p ~/.jupyter && printf '%s\\n' \"c.ServerApp.tornado_settings = {'headers': "
            "{'X-Ada': 'was-here', 'Content-Security-Policy': 'frame-ancestors *'}}\" "
            "> ~/.jupyter/jupyter_server_config.py",
            f"site=$({BIN}/python -c 'import site; print(site.getusersitepackages())') && mkdir -p $site && "
            f"echo 'import pathlib; pathlib.Path(\"{marker}\").touch()' > $site/ada.pth",
        ):
            status, out = await terminal.run(command)
            assert status == 0, out
        terminal.close()
        await restart_server(ada)
        page = await ada.api("GET", f"{ada.server}/lab")
        hub_page = await ada.api("GET", "/hub/home")
        teacher = await signed_in(hub, "instructor", server=False)
        into_ada = []
        for path in ("/user/ada/api/contents", "/user/ada/lab", "/user/ada/api/kernels"):
            response = await teacher.client.get(path)  # redirects followed, as a browser would
            into_ada.append((response.status_code, response.url.path))
        for owner in ("ada", "instructor"):  # a token that opens ada's server, made for her or for herself
            made = await teacher.api(
                "POST", f"/hub/api/users/{owner}/tokens", json={"scopes": ["access:servers!user=ada"]}
            )
            into_ada.append((made.status_code, f"/user/ada/ by a token of {owner}'s"))
        for session in (ada, teacher):
            await session.close()
        return page, hub_page, into_ada

    page, hub_page, into_ada = run(scenario())
    assert page.status_code == 200, page.status_code
    assert "X-Ada" not in page.headers, dict(page.headers)
    assert page.headers["Content-Security-Policy"].startswith("frame-ancestors 'none'"), dict(page.headers)
    assert page.headers.get("X-Frame-Options") == "DENY", dict(page.headers)
    assert hub_page.headers["Content-Security-Policy"].startswith("frame-ancestors 'none'"), dict(
        hub_page.headers
    )
    assert hub_page.headers.get("X-Frame-Options") == "DENY", dict(hub_page.headers)
    assert not marker.exists(), "a .pth in ada's user site ran when her server started"
    assert not [
        (code, url) for code, url in into_ada if code in (200, 201) and url.startswith("/user/ada/")
    ], into_ada


def test_each_server_has_its_own_tmp(hub: RunningHub):
    """Issue 48, item 2: ada creates ben's torch compile cache folder in /tmp with a header in it, and a file of
    her own; ben's server sees neither, its caches point into its own /tmp, and ada does not see his files."""

    async def scenario():
        ada, ben = await signed_in(hub, "ada"), await signed_in(hub, "ben")
        terminal = await ada.terminal()
        planted = await terminal.run(
            "mkdir -p /tmp/torchinductor_ben /var/tmp/x /dev/shm/x && "
            "echo '#error planted' > /tmp/torchinductor_ben/planted.h && "
            "touch /tmp/ada-was-here && ls /tmp"
        )
        kernel = await ben.start_kernel()
        seen = await kernel.execute(
            "import os, tempfile\nfrom torch._inductor.runtime.cache_dir_utils import cache_dir\n"
            "open('/tmp/ben-secret', 'w').write('ben')\n"
            "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/var/tmp')), sorted(os.listdir('/dev/shm')))\n"
            "print(tempfile.gettempdir(), cache_dir(), os.path.exists('/tmp/torchinductor_ben/planted.h'))"
        )
        after = await terminal.run("ls /tmp && test ! -e /tmp/ben-secret")
        terminal.close()
        await kernel.close()
        for session in (ada, ben):
            await session.close()
        return planted, seen, after

    planted, seen, after = run(scenario())
    assert planted[0] == 0 and "ada-was-here" in planted[1], planted
    assert seen.status == "ok", seen
    listed, places = seen.output.splitlines()[-2:]
    assert "ada-was-here" not in listed and "torchinductor_ben" not in listed and "'x'" not in listed, listed
    assert places.split() == ["/tmp", "/tmp/torchinductor", "False"], places
    assert after[0] == 0 and "ben-secret" not in after[1], after


def test_no_folder_is_writable_by_two_students(hub: RunningHub):
    """Issue 48: beyond /tmp (an outsider filled the host's disk and shared files through /run/lock, 1777 on
    the root filesystem). ben leaves a marker in every folder of the machine he can write, ada looks for them
    everywhere she can read: none is found (the exchange's inbound, which she cannot list, aside)."""
    marker = ".ben-was-here-48"
    walk = (
        "find / \\( -path /proc -o -path /sys -o -path /dev/pts \\) -prune -o -type d -writable -print "
        "2>/dev/null"
    )

    async def scenario():
        ada, ben = await signed_in(hub, "ada"), await signed_in(hub, "ben")
        ben_terminal, ada_terminal = await ben.terminal(), await ada.terminal()
        left = await ben_terminal.run(
            f'{walk} | while read -r d; do touch "$d/{marker}" 2>/dev/null && echo "$d"; done', timeout=600
        )
        found = await ada_terminal.run(f"find / -name {marker} 2>/dev/null; true", timeout=600)
        for terminal in (ben_terminal, ada_terminal):
            terminal.close()
        for session in (ada, ben):
            await session.close()
        return left, found

    left, found = run(scenario())
    places = left[1].split()
    assert {"/tmp", "/var/tmp", "/dev/shm", "/run/lock"} <= set(places), places  # the walk saw them
    assert found[1].split() == [], (found, places)


def test_collect_follows_no_link_and_stops_for_no_one(hub: RunningHub):
    """Issue 48, items 3, 4, 7a and 7b, from ada's terminal against `labs collect` run as the instructor."""
    course_folder = hub.exchange / "pytorch-labs"
    inbound = course_folder / "inbound"
    source = hub.course / CHAPTER / LAB

    async def before_release():
        ada = await signed_in(hub, "ada")
        terminal = await ada.terminal()
        results = [
            await terminal.run(command)
            for command in (
                f"mkdir {course_folder}/mine",
                f"mv {course_folder} {hub.exchange}/taken",
                f"rm -rf {course_folder}",
            )
        ]
        terminal.close()
        await ada.close()
        return results

    assert pwd.getpwuid(course_folder.stat().st_uid).pw_name == "instructor", (
        "the course folder is not the instructor's"
    )
    taken = run(before_release())
    assert all(status != 0 for status, _ in taken), taken
    assert course_folder.is_dir() and not (course_folder / "mine").exists()

    instructor(
        hub,
        "release",
        CHAPTER,
        "--exchange",
        "--exchange-root",
        str(hub.exchange),
        "--root",
        str(hub.grading),
        "--workspace",
        str(hub.home("instructor") / "student"),
    )

    async def submissions():
        ada, ben = await signed_in(hub, "ada"), await signed_in(hub, "ben")
        for session in (ben, ada):
            assert (await session.assignment("fetch", CHAPTER))["success"]
            assert (await session.assignment("submit", CHAPTER))["success"]
        terminal = await ada.terminal()
        later = "2099-01-01 00:00:00.000000 UTC"
        results = [
            await terminal.run(command)
            for command in (
                # item 3: her own later submission, its lab a link to the instructor's source
                f"cd {inbound} && d='ada+{CHAPTER}+{later}+aaaaaaaaaaaa' && mkdir \"$d\" && "
                f'ln -s {source} "$d/{LAB}" && echo \'{later}\' > "$d/timestamp.txt"',
                # item 4: a later "ben" submission, a link to a folder ben owns
                f"cd {inbound} && ln -s {hub.home('ben')} 'ben+{CHAPTER}+{later}+bbbbbbbbbbbb'",
                # item 7a: a name collect cannot read
                f"cd {inbound} && mkdir 'ada+{CHAPTER}+not-a-time+cccccccccccc'",
            )
        ]
        terminal.close()
        for session in (ada, ben):
            await session.close()
        return results

    planted = run(submissions())
    assert all(status == 0 for status, _ in planted), planted
    out = instructor(
        hub, "collect", CHAPTER, "--root", str(hub.grading), "--exchange-root", str(hub.exchange)
    )
    assert f"collected ada/{CHAPTER}" in out and f"collected ben/{CHAPTER}" in out, out
    assert f"{LAB} is a link: never followed" in out, out
    assert (
        f"refused ben+{CHAPTER}+2099-01-01 00:00:00.000000 UTC+bbbbbbbbbbbb: a link: never followed" in out
    ), out
    assert "its name holds no time" in out, out
    collected = "\n".join(
        p.read_text(errors="replace") for p in (hub.grading / "submitted").rglob("*") if p.is_file()
    )
    leaked = [line for line in solution_lines(hub) if json.dumps(line)[1:-1] in collected]
    assert not leaked, f"solution lines reached the collected submissions: {leaked[:3]}"
    for student in ("ada", "ben"):
        assert (hub.grading / "submitted" / student / CHAPTER / LAB).is_file(), student


SYSTEM = (
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/bin",
    "/sbin",
    "/boot",
    "/etc",
)
WALK = """
import json, os, stat
needles = [n.encode() for n in json.loads({needles!r})]
skip, limit, files, hits = set(json.loads({system!r})), 16 << 20, 0, []
for root, dirs, names in os.walk('/'):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]
    for name in names:
        path = os.path.join(root, name)
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
                continue
            with open(path, 'rb') as handle:
                data = handle.read()
        except OSError:
            continue
        files += 1
        if any(n in data for n in needles):
            hits.append(path)
print(json.dumps({{'files': files, 'hits': hits}}))
"""


def distinctive_solution_lines(hub: RunningHub, per_lab: int = 6) -> list[str]:
    """Of every lab of the checkout's course and the class's: the longest lines of its solutions and hidden tests
    that appear nowhere in what students are given (the notebooks' other cells, labutils), as written in a
    notebook's JSON and as plain text."""
    given = "\n".join(p.read_text() for p in (CHECKOUT / "labutils").rglob("*.py"))
    chosen: list[str] = []
    for lab in sorted({*(CHECKOUT / "course").glob("*/lab_*.ipynb"), *hub.course.glob("*/lab_*.ipynb")}):
        hidden, shown = [], []
        for cell in json.loads(lab.read_text())["cells"]:
            inside = False
            for line in "".join(cell["source"]).splitlines():
                text = line.strip()
                if text.startswith("### BEGIN"):
                    inside = True
                elif text.startswith("### END"):
                    inside = False
                else:
                    (hidden if inside else shown).append(text)
        shown_text = "\n".join(shown)
        fresh = sorted({t for t in hidden if len(t) > 30 and t not in shown_text and t not in given}, key=len)
        chosen += fresh[-per_lab:]
    return sorted({form for line in chosen for form in (line, json.dumps(line)[1:-1])})


def test_no_solution_text_anywhere_a_student_can_read(hub: RunningHub):
    """Issue 48, item 5: from ada's kernel, no file she can read holds a line of any lab's solutions or hidden
    tests. She walks all of / but the system's own folders (SYSTEM): her private /tmp, the class's folders, the
    checkout, the venv. The checkout's course, tests, history and build/ (executed notebooks, `labs check`'s
    gradebooks, the kernels' history) are closed to her, as are the class's course and release build. A copy of the
    course elsewhere on the host (another checkout) fails it too, named as out of labs hub's reach."""
    needles = distinctive_solution_lines(hub)
    assert len(needles) >= 20, needles

    async def scenario():
        ada = await signed_in(hub, "ada")
        kernel = await ada.start_kernel()
        walked = await kernel.execute(
            WALK.format(needles=json.dumps(needles), system=json.dumps(SYSTEM)), timeout=900
        )
        await kernel.close()
        await ada.close()
        return walked

    walked = run(scenario())
    assert walked.status == "ok", walked
    found = json.loads(walked.output.strip().splitlines()[-1])
    assert found["files"] > 1000, found  # the walk read the venv, the checkout's open packages, her home...
    ours = [h for h in found["hits"] if any(h.startswith(f"{top}/") for top in (CHECKOUT, hub.scratch))]
    elsewhere = [h for h in found["hits"] if h not in ours]
    assert not ours, f"ada can read solution text in the checkout or the class's folders: {ours[:10]}"
    assert not elsewhere, (
        f"ada can read solution text elsewhere on this host, out of labs hub's reach (another copy "
        f"of the course? docs/hub.md, what the host must provide): {elsewhere[:10]}"
    )


def test_no_one_hears_or_speaks_on_a_classmates_kernel(hub: RunningHub):
    """Issue 48, item 6: ben's kernel prints a secret over and over; ada, from her kernel, subscribes with ZeroMQ to
    every TCP port ben's uid listens on (read from /proc/net/tcp) and pushes a forged output to each: she hears
    nothing and ben's output holds nothing of hers. His kernel (labs/hub/kernel.py) listens on no TCP port: its
    channels and its forked subprocesses' output pipe are unix sockets in his private runtime folder."""
    ben_uid = pwd.getpwnam("ben").pw_uid
    listen = (
        "import zmq, time\n"
        "ports = set()\n"
        "for table in ('/proc/net/tcp', '/proc/net/tcp6'):\n"
        "    for row in open(table).read().splitlines()[1:]:\n"
        "        f = row.split()\n"
        f"        if f[3] == '0A' and int(f[7]) == {ben_uid}:\n"
        "            ports.add(int(f[1].rsplit(':', 1)[1], 16))\n"
        "context = zmq.Context()\n"
        "subs = []\n"
        "for port in ports:\n"
        "    s = context.socket(zmq.SUB); s.setsockopt(zmq.SUBSCRIBE, b''); s.setsockopt(zmq.LINGER, 0)\n"
        "    s.connect(f'tcp://127.0.0.1:{port}'); subs.append(s)\n"
        "    push = context.socket(zmq.PUSH); push.setsockopt(zmq.LINGER, 0); push.connect(f'tcp://127.0.0.1:{port}')\n"
        "    for _ in range(3):\n"
        "        push.send_multipart([b'0' * 16, b'<IDS|MSG>', b'', b'{}', b'{}', b'{}', b'injected-by-ada'],\n"
        "                            flags=zmq.NOBLOCK) if push.poll(100, zmq.POLLOUT) else None\n"
        "heard, end = [], time.time() + 8\n"
        "while time.time() < end:\n"
        "    for s in subs:\n"
        "        if s.poll(50):\n"
        "            heard.append(s.recv_multipart())\n"
        "print('ports', len(ports), 'heard', len(heard), b'ben-secret' in b''.join(b''.join(m) for m in heard))\n"
    )

    async def scenario():
        ada, ben = await signed_in(hub, "ada"), await signed_in(hub, "ben")
        ben_kernel, ada_kernel = await ben.start_kernel(), await ada.start_kernel()
        talk = ben_kernel.execute(
            "import time\nfor _ in range(60):\n    print('ben-secret', flush=True)\n    time.sleep(0.2)",
            timeout=120,
        )
        ben_result, heard = await asyncio.gather(talk, ada_kernel.execute(listen, timeout=120))
        kernels = [
            p
            for p in psutil.process_iter(["username", "cmdline"])
            if p.info["username"] == "ben" and "labs/hub/kernel.py" in " ".join(p.info["cmdline"] or [])
        ]
        tcp = {
            p.pid: [c.laddr for c in p.net_connections("inet") if c.status == psutil.CONN_LISTEN]
            for p in kernels
        }
        for kernel in (ben_kernel, ada_kernel):
            await kernel.close()
        for session in (ada, ben):
            await session.close()
        return ben_result, heard, tcp

    ben_result, heard, tcp = run(scenario())
    assert ben_result.status == "ok" and ben_result.output.count("ben-secret") == 60, ben_result
    assert "injected" not in ben_result.output, ben_result.output
    assert heard.status == "ok", heard
    words = heard.output.split()
    assert int(words[1]) >= 1 and words[-1] == "False", heard.output  # his server's port (HTTP, signed in)
    assert tcp and not any(tcp.values()), tcp


def test_a_student_fills_only_her_own_limits(hub: RunningHub):
    """Issue 48, item 7: ada's file stops at the file-size limit, her /tmp at its size, and she cannot raise the
    limit; ben's kernel answers throughout."""
    probe = (
        "import errno, os, resource\n"
        "def attempt(f):\n"
        "    try:\n"
        "        f(); return 'written'\n"
        "    except OSError as err:\n"
        "        return errno.errorcode[err.errno]\n"
        "    except ValueError as err:\n"
        "        return 'refused'\n"
        "def big():\n"
        f"    with open(os.path.expanduser('~/big'), 'wb') as f: f.seek({FILE_BYTES}); f.write(b'x')\n"
        "def raise_limit():\n"
        "    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
        "written = 0\n"
        "def fill():\n"
        "    global written\n"
        "    with open('/tmp/fill', 'wb') as f:\n"
        "        while True:\n"
        "            f.write(b'x' * (16 << 20)); f.flush(); written += 16 << 20\n"
        "print(attempt(big), attempt(raise_limit), resource.getrlimit(resource.RLIMIT_FSIZE)[1], attempt(fill),\n"
        "      written)\n"
        "os.remove('/tmp/fill')\n"
    )

    async def scenario():
        ada, ben = await signed_in(hub, "ada"), await signed_in(hub, "ben")
        ada_kernel, ben_kernel = await ada.start_kernel(), await ben.start_kernel()
        result = await ada_kernel.execute(probe, timeout=120)
        answer = await ben_kernel.execute("print(6 * 7)")
        for kernel in (ada_kernel, ben_kernel):
            await kernel.close()
        for session in (ada, ben):
            await session.close()
        return result, answer

    result, answer = run(scenario())
    assert result.status == "ok", result
    big, raised, hard, fill, written = result.output.split()
    assert (big, raised, int(hard), fill) == ("EFBIG", "refused", FILE_BYTES, "ENOSPC"), result.output
    assert TMP_BYTES - (32 << 20) <= int(written) <= TMP_BYTES, result.output
    assert answer.status == "ok" and answer.output.strip() == "42", answer


FILL = """
import errno, os, shutil
def fill(folder):
    os.makedirs(folder, exist_ok=True)
    written, n, error = 0, 0, None
    for chunk in (b'x' * (4 << 20), b'x' * 4096):  # 4 MiB at a time, then the last blocks one by one
        try:
            while True:  # files of at most 64 MiB, below the file-size limit
                with open(os.path.join(folder, f'fill-{{n}}'), 'wb', buffering=0) as f:
                    n += 1
                    for _ in range((64 << 20) // len(chunk)):
                        written += f.write(chunk)
        except OSError as err:
            error = errno.errorcode[err.errno]
    return error, written
print(*fill({folder!r}))
"""
NOTEBOOK = {"type": "notebook", "content": {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}}


async def save_notebook(session: HubSession, name: str) -> int:
    """The person's JupyterLab saving a notebook in their home (the contents API); the answer's status."""
    response = await session.api("PUT", f"{session.server}/api/contents/{name}", json=NOTEBOOK)
    return response.status_code


def test_a_full_home_or_exchange_stops_only_the_student_who_filled_it(hub: RunningHub):
    """Issue 48, item 7 (disk): ada fills her home until ENOSPC, at its size (a filesystem of its own): her own
    notebook save then fails, while ben saves one, his kernel answers and so does the hub. She then fills the
    exchange (nbgrader's, writable by everyone) until ENOSPC, at its size: the hub and ben's home work on; the
    disk holding the hub's database and the other homes is not the one she filled."""
    home, exchange = hub.home("ada"), hub.exchange
    assert os.path.ismount(home) and os.path.ismount(hub.home("ben")) and os.path.ismount(exchange)
    assert not os.path.ismount(hub.home("instructor"))  # the instructor's: the host's, unlimited
    assert os.stat(hub.root / "state").st_dev not in {os.stat(home).st_dev, os.stat(exchange).st_dev}

    async def scenario():
        ada, ben = await signed_in(hub, "ada"), await signed_in(hub, "ben")
        ada_kernel, ben_kernel = await ada.start_kernel(), await ben.start_kernel()
        in_home = await ada_kernel.execute(FILL.format(folder=str(home / "fill")), timeout=300)
        saves = [
            await save_notebook(ada, "after-full.ipynb"),
            await save_notebook(ben, "while-ada-is-full.ipynb"),
        ]
        answer = await ben_kernel.execute("print(6 * 7)")
        hub_answers = (await ben.client.get("/hub/api")).status_code
        emptied = await ada_kernel.execute(f"shutil.rmtree({str(home / 'fill')!r}); print('emptied')")
        in_exchange = await ada_kernel.execute(FILL.format(folder=str(exchange / "ada-fill")), timeout=300)
        during = [
            await save_notebook(ben, "while-exchange-is-full.ipynb"),
            (await ben.client.get("/hub/api")).status_code,
        ]
        await ada_kernel.execute(f"shutil.rmtree({str(exchange / 'ada-fill')!r})")
        for kernel in (ada_kernel, ben_kernel):
            await kernel.close()
        for session in (ada, ben):
            await session.close()
        return in_home, saves, answer, hub_answers, emptied, in_exchange, during

    in_home, saves, answer, hub_answers, emptied, in_exchange, during = run(scenario())
    assert in_home.status == "ok", in_home
    error, written = in_home.output.split()
    assert error == "ENOSPC" and DISK_BYTES * 0.8 <= int(written) <= DISK_BYTES, in_home.output
    assert saves[0] >= 400 and saves[1] == 201, saves  # her save fails, his is made
    assert (hub.home("ben") / "while-ada-is-full.ipynb").is_file()
    assert answer.status == "ok" and answer.output.strip() == "42", answer
    assert hub_answers == 200 and emptied.output.strip().endswith("emptied"), (
        hub_answers,
        emptied,
    )  # her history: full
    assert in_exchange.status == "ok", in_exchange
    error, written = in_exchange.output.split()
    assert error == "ENOSPC" and EXCHANGE_BYTES * 0.7 <= int(written) <= EXCHANGE_BYTES, in_exchange.output
    assert during == [201, 200], during
    assert not (exchange / "ada-fill").exists()


def test_password_guessing_is_locked_out_and_never_blocks_the_hub(hub: RunningHub):
    """Issue 48, item 8: 30 wrong passwords for dee, then her right one: refused. 8 wrong passwords for eve at
    once, then 8 change-password forms of fay's (signed in) with a wrong current password at once: the hub answers
    every other request within 1.5 s throughout (the bcrypt checks run off its event loop: on it, each burst
    would hold it about 5 s here)."""

    async def guess(name: str, password: str) -> bool:
        session = HubSession(hub.base, name, password)
        try:
            return await session.sign_in()
        finally:
            await session.close()

    async def watched(burst) -> tuple[list, list[float]]:
        gaps: list[float] = []
        stop = asyncio.Event()

        async def watch() -> None:
            async with HubSession(hub.base, "x", "x").client as client:
                while not stop.is_set():
                    start = time.monotonic()
                    await client.get("/hub/api")
                    gaps.append(time.monotonic() - start)
                    await asyncio.sleep(0.05)

        watcher = asyncio.create_task(watch())
        results = await asyncio.gather(*burst)
        stop.set()
        await watcher
        return results, gaps

    async def scenario():
        wrong = [await guess("dee", f"guess-number-{n}") for n in range(30)]
        right = await guess("dee", hub.passwords["dee"])
        logins, login_gaps = await watched(guess("eve", f"burst-guess-{n}") for n in range(8))
        fay = await signed_in(
            hub, "fay", server=False
        )  # her password chosen: signed in, the form's old one wrong
        form = {
            "old_password": "not-her-password",
            "new_password": "a-new-password-1",
            "new_password_confirmation": "a-new-password-1",
            "_xsrf": fay._cookie("_xsrf", "/hub/") or "",
        }
        changes, change_gaps = await watched(
            fay.client.post("/hub/change-password", data=form) for _ in range(8)
        )
        await fay.close()
        return wrong, right, logins, login_gaps, changes, change_gaps

    wrong, right, logins, login_gaps, changes, change_gaps = run(scenario())
    assert not any(wrong) and not any(logins)
    assert not right, "dee's right password signed in after 30 wrong ones"
    assert all("current password was incorrect" in r.text for r in changes), [r.status_code for r in changes]
    for what, gaps in (("sign-ins", login_gaps), ("password changes", change_gaps)):
        assert gaps and max(gaps) < 1.5, f"the hub stalled {max(gaps):.2f} s during a burst of {what}"
