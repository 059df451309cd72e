"""The README's Students section: short, first, and its hours what the notebooks add up to."""

from __future__ import annotations

import re

import nbformat

from graders.coursedir import is_lab, nbgrader_meta
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
# The estimate the README states: minutes per word of markdown, lesson code cell, lesson exercise, lab exercise.
WORDS_A_MINUTE, PER_CELL, PER_EXERCISE, PER_LAB_EXERCISE = 120, 1.5, 5, 25
ROW = re.compile(r"^\| `(\d\d_\w+)` \| .* \| ([\d.]+) h \|$", re.M)


def estimated_hours(chapter: str) -> float:
    """The README's estimate of one chapter, from its notebooks."""
    minutes = 0.0
    for path in sorted((ROOT / "course" / chapter).glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        minutes += sum(len(c.source.split()) for c in cells if c.cell_type == "markdown") / WORDS_A_MINUTE
        if is_lab(path):
            minutes += PER_LAB_EXERCISE * sum(1 for c in cells if nbgrader_meta(c).get("solution"))
        else:
            minutes += PER_CELL * sum(1 for c in cells if c.cell_type == "code")
            minutes += PER_EXERCISE * sum(1 for c in cells if "exercise" in c.metadata.get("tags", []))
    return minutes / 60


def test_the_students_section_comes_first_and_is_short():
    sections = re.findall(r"^## (.+)$", README, re.M)
    assert sections[0] == "Students"
    students = README.split("## Students", 1)[1].split("\n## ", 1)[0]
    assert len([line for line in students.splitlines() if line.strip()]) <= 22
    assert "labs check-lab student/" in students and "download.pytorch.org/whl/cpu" in students
    assert "make lab" in README and "make test" in README


def test_each_chapters_hours_are_what_its_notebooks_add_up_to():
    stated = {chapter: float(hours) for chapter, hours in ROW.findall(README)}
    chapters = sorted(p.name for p in (ROOT / "course").iterdir() if re.match(r"\d\d_", p.name))
    assert sorted(stated) == chapters
    estimated = {chapter: estimated_hours(chapter) for chapter in chapters}
    off = {c: (stated[c], round(estimated[c], 1)) for c in chapters if abs(stated[c] - estimated[c]) > 0.5}
    assert off == {}, f"README hours (stated, estimated now): {off}"
    said = " ".join(README.split())
    assert (
        f"{WORDS_A_MINUTE} words of markdown a minute, {PER_CELL} minutes per lesson code cell, "
        f"{PER_EXERCISE} per lesson exercise, {PER_LAB_EXERCISE} per lab exercise"
    ) in said
    total = int(re.search(r"About (\d+) hours in all", README).group(1))
    assert abs(total - sum(estimated.values())) <= 1.5
