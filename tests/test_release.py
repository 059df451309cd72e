"""Student notebooks: solutions removed, and rebuilding the release keeps a student's edits."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from tests.conftest import BIN, FIXTURES, ROOT, labs_env
from tests.inprocess import labs_here

pytestmark = pytest.mark.slow


def _release(tmp_path: Path) -> subprocess.CompletedProcess:
    return labs_here(
        "release",
        "--course",
        str(FIXTURES / "course"),
        "--root",
        str(tmp_path / "nb"),
        "--workspace",
        str(tmp_path / "student"),
    )


def test_release_strips_solutions_and_keeps_student_edits(tmp_path: Path):
    assert _release(tmp_path).returncode == 0
    lab = tmp_path / "student" / "fx_basic" / "lab_basic.ipynb"
    source = lab.read_text()
    assert "raise NotImplementedError()" in source and "return t * factor" not in source
    assert "BEGIN HIDDEN TESTS" not in source and "manual_seed(2)" not in source
    nb = nbformat.read(lab, as_version=4)
    nb.cells[4].source = "def scale(t, factor):\n    return t * factor  # my answer\n"
    nbformat.write(nb, lab)
    second = _release(tmp_path)
    assert second.returncode == 0 and "2 kept" in second.stdout
    assert "# my answer" in lab.read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except urllib.error.URLError:
        return None  # not listening yet


def test_make_lab_serves_jupyterlab_with_token(tmp_path: Path):
    port, token = _free_port(), "t0ken-for-test"
    server = subprocess.Popen(
        [
            str(BIN / "labs"),
            "lab",
            "--port",
            str(port),
            "--token",
            token,
            "--no-browser",
            "--workspace",
            str(tmp_path / "student"),
            "--course",
            str(FIXTURES / "course"),
            "--root",
            str(tmp_path / "nb"),
        ],
        cwd=ROOT,
        env=labs_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        status = None
        while time.monotonic() < deadline and status != 200:
            time.sleep(1)
            assert server.poll() is None, server.stdout.read()
            status = _get(f"http://127.0.0.1:{port}/api/status?token={token}")
        assert status == 200
        assert _get(f"http://127.0.0.1:{port}/lab?token={token}") == 200
        assert _get(f"http://127.0.0.1:{port}/api/contents/fx_basic?token={token}") == 200
        assert _get(f"http://127.0.0.1:{port}/api/contents/fx_basic") == 403  # token auth is on
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert (tmp_path / "student" / "fx_basic" / "lab_basic.ipynb").exists()


def test_release_and_grading_share_one_nbgrader_root(tmp_path: Path):
    """`labs release` generates every notebook into the course's root and records the labs alone in its
    gradebook; `labs grade`'s step (the labs again, into the same root) leaves the released lessons in place."""
    from graders.nbgrader.course_root import CourseRoot
    from graders.nbgrader.nbgrader_course import open_gradebook
    from graders.nbgrader.release import record_labs, release_chapter

    root, chapter = CourseRoot(tmp_path / "root"), FIXTURES / "course" / "fx_basic"
    assert release_chapter(root, chapter)
    released, everything = root.release / "fx_basic", ["1_passes.ipynb", "lab_basic.ipynb"]
    assert sorted(p.name for p in released.glob("*.ipynb")) == everything
    record_labs(root, "fx_basic", [chapter / "lab_basic.ipynb"])
    assert sorted(p.name for p in released.glob("*.ipynb")) == everything
    assert sorted(p.name for p in (root.source / "fx_basic").glob("*.ipynb")) == everything
    with open_gradebook(root.db_url) as gradebook:
        assert {a.name: [n.name for n in a.notebooks] for a in gradebook.assignments} == {
            "fx_basic": ["lab_basic"]
        }
    assert "return t * factor" not in (released / "lab_basic.ipynb").read_text()


def test_a_release_after_grading_keeps_the_points_it_was_graded_with(tmp_path: Path):
    """An edited lab released again after submissions were graded reaches the release; the gradebook keeps the
    points the class was graded with (the command says so)."""
    import shutil

    from graders.nbgrader.course_root import CourseRoot
    from graders.nbgrader.nbgrader_course import open_gradebook
    from graders.nbgrader.release import build_release

    chapter = tmp_path / "course" / "fx_basic"
    shutil.copytree(FIXTURES / "course" / "fx_basic", chapter)
    root = CourseRoot(tmp_path / "root")
    assert build_release([chapter], root) == (root.release, [])
    with open_gradebook(root.db_url) as gradebook:
        before = gradebook.find_assignment("fx_basic").max_score
        gradebook.add_student("ada")
        gradebook.add_submission("fx_basic", "ada")
    nb = nbformat.read(chapter / "lab_basic.ipynb", as_version=4)
    graded_cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("points"))
    graded_cell.metadata["nbgrader"]["points"] += 7
    nbformat.write(nb, chapter / "lab_basic.ipynb")
    assert build_release([chapter], root) == (root.release, ["fx_basic"])
    with open_gradebook(root.db_url) as gradebook:
        assert gradebook.find_assignment("fx_basic").max_score == before
    released = nbformat.read(root.release / "fx_basic" / "lab_basic.ipynb", as_version=4)
    assert sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in released.cells) == before + 7
