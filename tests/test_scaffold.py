"""`labs new`: what it writes passes lint and runs; its example exercise passes `labs check`; bad names are one line."""

from __future__ import annotations

from pathlib import Path

from tests.inprocess import labs_here


def _new_chapter(tmp_path: Path, *extra: str):
    return labs_here(
        "new",
        "chapter",
        "06_tricks",
        "--course",
        str(tmp_path / "course"),
        "--wrong-solutions",
        str(tmp_path / "wrong"),
        *extra,
    )


def test_new_chapter_and_lab_are_lint_clean_and_never_overwrite(tmp_path: Path):
    result = _new_chapter(tmp_path, "-e", "double", "-e", "halve")
    assert result.returncode == 0, result.stdout + result.stderr
    chapter = tmp_path / "course" / "06_tricks"
    assert sorted(p.name for p in chapter.iterdir()) == ["1_first_lesson.ipynb", "lab_tricks.ipynb", "probes"]
    assert len(list((tmp_path / "wrong" / "06_tricks").glob("*__*.py"))) == 6
    lab = labs_here(
        "new",
        "lab",
        "06_tricks",
        "extra",
        "-e",
        "triple",
        "--course",
        str(tmp_path / "course"),
        "--wrong-solutions",
        str(tmp_path / "wrong"),
    )
    assert lab.returncode == 0, lab.stderr
    lint = labs_here("lint", str(chapter))
    assert lint.returncode == 0 and "3 notebooks, 0 problems" in lint.stdout, lint.stdout
    again = _new_chapter(tmp_path)
    assert (
        again.returncode == 2
        and again.stderr.strip() == f"error: {chapter}: already exists (labs new never overwrites)"
    )
    taken = labs_here(
        "new",
        "lab",
        "06_tricks",
        "more",
        "-e",
        "double",
        "--course",
        str(tmp_path / "course"),
        "--wrong-solutions",
        str(tmp_path / "wrong"),
    )
    assert (
        taken.returncode == 2 and "grade_id 'double' is taken by another lab of the chapter" in taken.stderr
    )


def test_bad_names_are_one_line_exit_2(tmp_path: Path):
    for args, message in [
        (["new", "chapter", "6tricks"], "a chapter is named NN_topic"),
        (["new", "chapter", "06_tricks", "-e", "Bad-Name"], "must be a lower-case Python identifier"),
        (["new", "lab", "99_none", "x"], "no such chapter"),
    ]:
        result = labs_here(
            *args, "--course", str(tmp_path / "course"), "--wrong-solutions", str(tmp_path / "w")
        )
        assert (
            result.returncode == 2
            and message in result.stderr
            and len(result.stderr.strip().splitlines()) == 1
        )
    assert not (tmp_path / "course").exists()
