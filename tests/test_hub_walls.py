"""`labs collect` follows no link and never stops for one bad entry (graders/nbgrader/exchange.py), without a hub;
a server's private /tmp.

A hand-made exchange (nbgrader's layout: ``EXCHANGE/pytorch-labs/inbound/<student>+<chapter>+<time>+<random>``)
holds the attacks of issue 48 from a student's side: a notebook that is a link to the instructor's source lab, a
later "submission" of a classmate that is a link to a folder the classmate owns, a FIFO, malformed names, a
``timestamp.txt`` that is not a time, a file swapped for a link between the look and the copy. Collect takes each
student's latest acceptable submission, copies no byte the student could not read themself, names every entry it
refused, and `labs collect` exits 0. The owner checks (a submission or a file owned by someone other than the
student it names, the course folder made by a student) chown to other uids: as root (CI is), skipped otherwise.
tests/test_hub_walls_class.py performs the same attacks from a student's account on a real class.

Also the exchange's course folder that labs hub makes for the instructor (labs/hub/users.py), and each server's
private /tmp (labs/hub/walls.py): as root, a process given one sees only what was kept for it
and fills it only to its size; a host that refuses mount namespaces is named before a class starts.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from graders.nbgrader import exchange
from tests.conftest import FIXTURES
from tests.inprocess import labs_here

CHAPTER = "fx_basic"
LAB = "lab_basic.ipynb"
SECRET = "### BEGIN SOLUTION\nanswer = 'the instructor's solution'\n### END SOLUTION"
UIDS = {61001: "ada", 61002: "ben", 61003: "instructor"}  # stand-ins for the class's unix users (root only)


def notebook(text: str) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "source": text, "metadata": {}, "outputs": [], "execution_count": None}
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 4,
        }
    )


def stamp(minute: int) -> str:
    return f"2026-12-05 10:{minute:02d}:00.000000 UTC"


def submit(inbound: Path, student: str, minute: int, text: str, random: str = "abcdefghijkl") -> Path:
    """A submission as nbgrader's submit leaves it: the lab, timestamp.txt, submission_secret.txt."""
    folder = inbound / f"{student}+{CHAPTER}+{stamp(minute)}+{random}"
    folder.mkdir(parents=True)
    (folder / LAB).write_text(notebook(text))
    (folder / "timestamp.txt").write_text(stamp(minute))
    (folder / "submission_secret.txt").write_text("s3cret")
    return folder


@pytest.fixture
def class_exchange(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(exchange, its inbound folder, the instructor's course root), and the instructor's source lab beside."""
    inbound = tmp_path / "exchange" / "pytorch-labs" / "inbound"
    inbound.mkdir(parents=True)
    source = tmp_path / "course" / CHAPTER
    source.mkdir(parents=True)
    (source / LAB).write_text(notebook(SECRET))
    return tmp_path / "exchange", inbound, tmp_path / "grading"


def everything_under(folder: Path) -> str:
    return "\n".join(
        p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file() and not p.is_symlink()
    )


def as_users(monkeypatch, mine: str | None = None) -> None:
    """uids -> the class's names; ``mine``: the name of the uid running the test (its files' owner)."""
    names = dict(UIDS)
    if mine:
        names[os.getuid()] = mine
    monkeypatch.setattr(exchange, "user_name", lambda uid: names.get(uid, str(uid)))


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the owner checks chown to other uids: as root (CI is)")


def test_collect_follows_no_link_and_names_what_it_refuses(class_exchange, tmp_path: Path):
    """Every attack below is refused and named, the owner check off (`labs hub --demo`: one unix user; the next
    tests check owners); each student's own earlier submission is collected; `labs collect` exits 0 (no class stopped by one student's entry); not a byte of the source reaches the grading."""
    exchange_root, inbound, grading = class_exchange
    source = tmp_path / "course" / CHAPTER / LAB
    submit(inbound, "ada", 1, "ada = 1  # her own")
    linked = submit(inbound, "ada", 2, "")
    (linked / LAB).unlink()
    (linked / LAB).symlink_to(source)  # issue 48 item 3: full marks and the solution
    ben = submit(inbound, "ben", 1, "ben = 1  # his own")
    (inbound / f"ben+{CHAPTER}+{stamp(9)}+xxxxxxxxxxxx").symlink_to(
        ben
    )  # item 4: a later "ben" that is a link
    (inbound / f"ada+{CHAPTER}+{stamp(8)}+linkedfolder").symlink_to(source.parent)
    fifo = submit(inbound, "ada", 3, "ada = 3")
    (fifo / "timestamp.txt").unlink()
    os.mkfifo(fifo / "timestamp.txt")  # would hang a copy that opens it blocking
    bad_time = submit(inbound, "ada", 4, "ada = 4")
    (bad_time / "timestamp.txt").write_text("not a time")  # would stop nbgrader's collect and feedback
    (inbound / f"ada+{CHAPTER}+not-a-time+abcdefghijkl").mkdir()  # item 7a: nbgrader's collect exits 2
    (inbound / f"..+{CHAPTER}+{stamp(5)}+abcdefghijkl").mkdir()  # a student named ".." (a path)
    (inbound / f"cy+{CHAPTER}+{stamp(5)}+abcdefghijkl").write_text("a file, not a folder")

    result = labs_here(
        "collect",
        CHAPTER,
        "--course",
        str(FIXTURES / "course"),
        "--root",
        str(grading),
        "--exchange-root",
        str(exchange_root),
        "--no-owner-check",
    )  # one uid here: links still refused
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert f"collected ada/{CHAPTER}" in out and f"collected ben/{CHAPTER}" in out, out
    assert out.count("refused ") == 8, out
    assert f"refused ada+{CHAPTER}+{stamp(2)}+abcdefghijkl: {LAB} is a link: never followed" in out, out
    assert f"refused ben+{CHAPTER}+{stamp(9)}+xxxxxxxxxxxx: a link: never followed" in out, out
    assert "timestamp.txt is not a plain file" in out and "its timestamp.txt is not a time" in out, out
    assert "its name holds no time" in out and "not a submission's name" in out and "not a folder" in out, out
    submitted = grading / "submitted"
    assert (
        json.loads((submitted / "ada" / CHAPTER / LAB).read_text())["cells"][0]["source"]
        == "ada = 1  # her own"
    )
    assert (
        json.loads((submitted / "ben" / CHAPTER / LAB).read_text())["cells"][0]["source"]
        == "ben = 1  # his own"
    )
    assert "BEGIN SOLUTION" not in everything_under(grading)
    assert sorted(p.name for p in submitted.iterdir()) == ["ada", "ben"]  # nothing named ".." or outside


def test_a_file_swapped_for_a_link_after_the_look_is_not_copied(class_exchange, tmp_path: Path, monkeypatch):
    """The copy opens each file again without following: a link put in place between survey and copy (a race
    the student can run against their own submission) is skipped, not followed."""
    as_users(monkeypatch, mine="ada")
    _, inbound, grading = class_exchange
    folder = submit(inbound, "ada", 1, "ada = 1")
    [found] = exchange.survey(inbound, CHAPTER).latest.values()
    (folder / LAB).unlink()
    (folder / LAB).symlink_to(tmp_path / "course" / CHAPTER / LAB)
    dest = grading / "submitted" / "ada" / CHAPTER
    skipped = exchange.copy_submission(inbound, found, dest, [LAB, "timestamp.txt"], os.getuid(), 1 << 20)
    assert skipped == {LAB: "a link: never followed"}
    assert not dest.exists()  # collected whole or not at all: no timestamp.txt without its notebook
    assert "BEGIN SOLUTION" not in everything_under(grading)


def test_a_submission_with_one_file_over_the_size_is_refused_whole(class_exchange, monkeypatch):
    """An outsider's newest submission held a notebook over the size limit: collect took its timestamp.txt
    alone, and the student vanished from `labs grade`. Now the whole submission is refused, and the student's
    latest acceptable one is collected instead."""
    as_users(monkeypatch, mine="ada")
    _, inbound, grading = class_exchange
    submit(inbound, "ada", 1, "ada = 1  # her own")
    large = submit(inbound, "ada", 2, "ada = 2")
    (large / LAB).write_text(notebook("x = '" + "y" * 5000 + "'"))
    found = exchange.survey(inbound, CHAPTER, max_bytes=4000)
    assert found.latest["ada"].timestamp.minute == 1
    assert found.refused == {large.name: f"{LAB} is larger than 4000 bytes"}
    dest = grading / "submitted" / "ada" / CHAPTER
    latest = exchange.survey(inbound, CHAPTER).latest["ada"]  # no size given: the large one is the latest
    skipped = exchange.copy_submission(inbound, latest, dest, None, os.getuid(), 4000)
    assert skipped == {LAB: "larger than 4000 bytes"} and not dest.exists()


def test_an_exchange_reached_through_a_link_is_refused(class_exchange, tmp_path: Path):
    exchange_root, inbound, _ = class_exchange
    (tmp_path / "elsewhere").symlink_to(exchange_root)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        exchange.open_folder(tmp_path / "elsewhere" / "pytorch-labs" / "inbound")


def test_collect_refuses_what_someone_else_owns(class_exchange, tmp_path: Path, monkeypatch):
    """As root: a "ben" submission made by ada, and ada's submission holding a hard link to a file of the
    instructor's, are refused; ben's and ada's own are collected."""
    need_root()
    as_users(monkeypatch)
    uid = {name: number for number, name in UIDS.items()}
    exchange_root, inbound, grading = class_exchange

    def owned(folder: Path, who: str) -> Path:
        for path in [folder, *folder.iterdir()]:
            os.chown(path, uid[who], uid[who], follow_symlinks=False)
        return folder

    owned(submit(inbound, "ben", 1, "ben = 1  # his own"), "ben")
    owned(submit(inbound, "ben", 5, "ben = 'forged by ada'", random="forgedforged"), "ada")
    owned(submit(inbound, "ada", 1, "ada = 1  # her own"), "ada")
    linked = owned(submit(inbound, "ada", 6, "", random="hardlinkedxx"), "ada")
    source = tmp_path / "course" / CHAPTER / LAB
    os.chown(source, uid["instructor"], uid["instructor"])
    (linked / LAB).unlink()
    os.link(source, linked / LAB)  # what fs.protected_hardlinks=0 would let ada do

    found = exchange.collect(grading, CHAPTER, exchange_root, [LAB])
    assert sorted(found.folders) == ["ada", "ben"]
    assert found.refused == {
        f"ben+{CHAPTER}+{stamp(5)}+forgedforged": "submitted by ada, not by the student it names",
        f"ada+{CHAPTER}+{stamp(6)}+hardlinkedxx": f"{LAB} belongs to instructor, not to ada",
    }
    assert "ben = 1  # his own" in (found.folders["ben"] / LAB).read_text()
    assert "BEGIN SOLUTION" not in everything_under(grading)


def test_a_course_folder_a_student_made_stops_collect_saying_so(class_exchange, monkeypatch):
    """As root: a course folder in the exchange owned by a student (who could then remove others' submissions)
    is named as such instead of being trusted."""
    need_root()
    as_users(monkeypatch)
    exchange_root, inbound, grading = class_exchange
    os.chown(inbound.parent, 61001, 61001)
    with pytest.raises(RuntimeError, match="course folder belongs to ada, not to the instructor"):
        exchange.collect(grading, CHAPTER, exchange_root, [LAB])


def test_a_host_without_mount_namespaces_is_named_before_the_class_starts(monkeypatch):
    """labs hub refuses to start (ClassNotPossible, saying why) where no server could get its private /tmp."""
    from labs.hub import walls

    def refused(*args) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(walls, "private_tmp", refused)
    assert "needs a mount namespace of its own" in (walls.private_tmp_possible() or "")


def test_a_private_tmp_shows_nothing_of_the_real_one_but_what_is_kept(tmp_path: Path):
    """As root: a process given a private /tmp (as each server is, before it becomes its person) sees only the
    folders kept for it there, cannot fill it past its size, and leaves nothing in the real /tmp."""
    need_root()
    import subprocess
    import tempfile

    from labs.hub.walls import private_tmp

    kept = Path(tempfile.mkdtemp(prefix="labs-walls-kept-", dir="/tmp"))
    other = Path(tempfile.mkdtemp(prefix="labs-walls-other-", dir="/tmp"))
    try:
        (kept / "needed").write_text("x\n")
        (kept / "needed").chmod(0o644)  # readable by its person whatever the umask was
        kept.chmod(0o755)
        script = (
            "ls -A /tmp /dev/shm; cat " + str(kept / "needed") + "; touch /tmp/left-behind; "
            "head -c 3000000 /dev/zero > /tmp/fill || echo FULL"
        )

        def become_nobody() -> None:  # as the spawner: the private /tmp as root, then the person's uid
            private_tmp(65534, 65534, 2 << 20, [str(kept)])
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)

        result = subprocess.run(
            ["sh", "-c", script], capture_output=True, text=True, check=False, preexec_fn=become_nobody
        )
        listed = result.stdout.split()
        assert kept.name in listed and other.name not in listed, result.stdout
        assert "x" in listed and "FULL" in listed, result.stdout + result.stderr
        assert not Path("/tmp/left-behind").exists()
    finally:
        for folder in (kept, other):
            shutil.rmtree(folder, ignore_errors=True)


def test_labs_hub_makes_the_exchange_course_the_instructors_and_names_one_a_student_made(tmp_path: Path):
    """As root: labs hub makes the exchange's course folder and its outbound, inbound and feedback with nbgrader's
    modes, the instructor's; one a student made first (or a link) stops it, saying so (issue 48, item 7b)."""
    need_root()
    import pwd

    from labs.hub.users import AccountError, make_exchange_course

    instructor = pwd.struct_passwd(("instructor", "x", 61003, 61003, "", "/nonexistent", "/bin/sh"))
    course = tmp_path / "exchange" / "pytorch-labs"
    course.parent.mkdir()
    make_exchange_course(course, instructor)
    found = {p.name: (p.stat().st_uid, p.stat().st_mode & 0o7777) for p in [course, *course.iterdir()]}
    assert found == {
        "pytorch-labs": (61003, 0o755),
        "outbound": (61003, 0o755),
        "inbound": (61003, 0o2733),
        "feedback": (61003, 0o711),
    }
    make_exchange_course(course, instructor)  # again, as at every start: kept as it is

    taken = tmp_path / "taken" / "pytorch-labs"
    taken.mkdir(parents=True)
    os.chown(taken, 61001, 61001)  # ada made it before the first release
    with pytest.raises(AccountError, match="belongs to 61001, not to the instructor instructor"):
        make_exchange_course(taken, instructor)
    linked = tmp_path / "linked" / "pytorch-labs"
    linked.parent.mkdir()
    linked.symlink_to(tmp_path)
    with pytest.raises(AccountError, match="is a link"):
        make_exchange_course(linked, instructor)


def test_a_home_of_its_own_fills_alone_and_outlives_its_mount(tmp_path: Path):
    """As root (with loop devices): a disk of labs.hub.disks is made in full, mounted on its folder, full at its size
    (ENOSPC) while the folder beside it is not; unmounted with everything under the class's folder, it keeps what
    was written for the next mount; a folder holding files gets no image over them, and a class that needs more
    than the free disk is refused before anything is made."""
    need_root()
    from labs.hub import HubPlan
    from labs.hub.disks import Disk, DiskError, check_room, disks_possible, mount, mounted, unmount_under

    if (why := disks_possible()) is not None:
        pytest.skip(why)
    root = tmp_path / "class"
    disk = Disk(root / "disks" / "home-ada.img", root / "home" / "ada", 32 << 20, None)
    mount(disk)
    try:
        assert (
            str(disk.mount) in mounted() and disk.image.stat().st_blocks * 512 >= disk.size
        )  # allocated in full
        assert not any(disk.mount.iterdir())  # no lost+found
        (disk.mount / "kept").write_text("kept\n")
        written, error = 0, None
        try:
            with open(disk.mount / "fill", "wb", buffering=0) as handle:
                while True:
                    written += handle.write(b"x" * (1 << 20))
        except OSError as err:
            error = err.errno
        assert error == 28 and 24 << 20 <= written <= 32 << 20, (error, written)  # ENOSPC at its size
        (root / "home" / "ben").mkdir()
        (root / "home" / "ben" / "beside").write_text("not full\n")  # the host's disk, untouched
    finally:
        assert unmount_under(root) == [str(disk.mount)]
    assert str(disk.mount) not in mounted() and not any(disk.mount.iterdir())
    mount(disk)  # the image made before, as it was
    try:
        assert (disk.mount / "kept").read_text() == "kept\n"
    finally:
        unmount_under(root)
    crowded = Disk(root / "disks" / "home-ben.img", root / "home" / "ben", 32 << 20, None)
    with pytest.raises(DiskError, match="holds files and has no image"):
        mount(crowded)
    assert not crowded.image.exists()
    plan = HubPlan(
        root, 8000, "instructor", ("cy",), root / "grading", Path("/usr/bin/true"), disk_bytes=1 << 60
    )
    with pytest.raises(DiskError, match="a smaller --disk, or --disk 0"):
        check_room(plan)
