"""`labs grade` on a zip of submissions: entries with unsafe names are refused, the rest graded."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.inprocess import labs_here

pytestmark = pytest.mark.grading

LAB = FIXTURES / "course" / "fx_basic" / "lab_basic.ipynb"


def test_zip_of_submissions(tmp_path: Path) -> None:
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(LAB, "ada/fx_basic/lab_basic.ipynb")
        zipped.write(LAB, "../escape/fx_basic/lab_basic.ipynb")
        zipped.writestr("caf\u00e9/fx_basic/lab_basic.ipynb", LAB.read_bytes())
    proc = labs_here(
        "grade",
        str(archive),
        "--course",
        str(FIXTURES / "course"),
        "--chapter",
        "fx_basic",
        "--root",
        str(tmp_path / "root"),
        "--jobs",
        "1",
    )
    grades = json.loads((tmp_path / "root" / "reports" / "results.json").read_text())["grades"]
    assert [(g["student"], g["score"]) for g in grades] == [("ada", 5.0)]
    assert proc.returncode == 1  # refused entries make the batch incomplete
    assert "'../escape/fx_basic/lab_basic.ipynb': refused" in proc.stderr
    assert "refused (unsafe or non-ASCII path)" in proc.stderr and "caf" in proc.stderr
    assert not (tmp_path / "escape").exists()


def test_not_a_zip_is_one_line_exit_2(tmp_path: Path) -> None:
    bogus = tmp_path / "submissions.zip"
    bogus.write_text("not a zip")
    proc = labs_here(
        "grade",
        str(bogus),
        "--course",
        str(FIXTURES / "course"),
        "--chapter",
        "fx_basic",
        "--root",
        str(tmp_path / "root"),
    )
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: {bogus}: not a zip file"


def test_a_zip_of_the_class_folder_itself_is_read_from_that_folder(tmp_path: Path) -> None:
    """`zip -r submitted.zip submitted`: every entry under one top folder, which is the class."""
    from graders.pipeline import gather

    source = tmp_path / "submitted.zip"
    with zipfile.ZipFile(source, "w") as zipped:
        zipped.write(LAB, "submitted/ada/fx_basic/lab_basic.ipynb")
        zipped.write(LAB, "submitted/ben/fx_basic/lab_basic.ipynb")
    (tmp_path / "scratch").mkdir()
    found = gather(source, {"fx_basic": {"lab_basic.ipynb"}}, tmp_path / "scratch")
    assert sorted(s.student for s in found.submissions) == ["ada", "ben"] and not found.rejected


@pytest.mark.parametrize("wrapped", ["zip", "folder"])
def test_submissions_one_level_off_are_one_line_exit_2(tmp_path: Path, wrapped: str) -> None:
    """A zip whose submissions sit two folders down, or one student's folder given for the class: nothing is
    graded, and that is an error naming the layout, not an empty success (no report is written over the last)."""
    if wrapped == "zip":
        source = tmp_path / "download.zip"
        with zipfile.ZipFile(source, "w") as zipped:
            zipped.write(LAB, "course/class/ada/fx_basic/lab_basic.ipynb")
    else:
        source = tmp_path / "submitted" / "ada"
        (source / "fx_basic").mkdir(parents=True)
        (source / "fx_basic" / "lab_basic.ipynb").write_bytes(LAB.read_bytes())
    root = tmp_path / "root"
    proc = labs_here(
        "grade",
        str(source),
        "--course",
        str(FIXTURES / "course"),
        "--chapter",
        "fx_basic",
        "--root",
        str(root),
    )
    assert proc.returncode == 2 and proc.stderr.strip() == (
        f"error: {source}: no submission of fx_basic in it (a submission is STUDENT/CHAPTER/LAB.ipynb at its top "
        "level)"
    ), proc.stderr
    assert not (root / "reports").exists()
