"""The student's path, in a real browser (Playwright driving Debian's Chromium, headless).

1. `labs lab` serves the released course; a lesson of every chapter is opened in JupyterLab, switched to
   SMOKE = True in its parameters cell, and run up to its first picture (else its first self-check) with
   Run > Run All Above Selected Cell, then that cell with Shift+Enter; none of those cells may end in an
   error and the picture must show. (The notebooks stage, `labs run course --smoke`, executes every cell of
   every lesson; a whole lesson again in the browser cost the suite about 2 CPU-minutes and proved no more
   of the student's path.) Screenshots: build/report/browser/<chapter>__<lesson>.png.
2. In every lab, the student runs the first exercise's visible tests on the blank release (they fail), pastes
   a correct solution, runs it and its tests (they pass). Screenshots: ...__blank.png and ...__solved.png.
3. Rebuilding the release afterwards leaves the files the student saved from the browser byte for byte.
4. The static course written by `labs run --html` opens offline in Chromium with every picture decoded.

Without /usr/bin/chromium the tests skip and say how to install it. LABS_BROWSER_COURSE=<folder> runs
part 1-3 on another course folder (e.g. a subset of chapters while one is being written).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import nbformat
import pytest

from tests.browser import chromium
from tests.browser.jupyterlab import LabNotebook, LabServer, error_outputs, lab_server, picture_cells
from tests.browser.site_check import check_site
from tests.conftest import FIXTURES, ROOT, labs
from tests.requires import unavailable

pytestmark = [pytest.mark.slow, pytest.mark.browser]

COURSE = Path(os.environ.get("LABS_BROWSER_COURSE", ROOT / "course")).resolve()
SHOTS = ROOT / "build" / "report" / "browser"
LESSON_TIMEOUT = 900.0
VISUALIZER = re.compile(r"\b(draw_graph|strides\.(show|compare)|memory\.(compare|track_step))\b")
DRAWING_CALLS = {
    "draw_graph",
    "graphs.draw_graph",
    "strides.show",
    "strides.compare",
    "memory.compare",
    "plt.show",
}
SELF_CHECK = re.compile(r"\bexercises\.check\(")


@pytest.fixture(autouse=True)
def _chromium_present() -> None:
    why = chromium.missing()
    if why:
        unavailable("browser", why)


def lesson_per_chapter(course: Path) -> list[Path]:
    """Per chapter, the first lesson that uses a course visualizer (else its first lesson)."""
    chosen = []
    for chapter in sorted(p for p in course.iterdir() if p.is_dir() and not p.name.startswith(".")):
        lessons = sorted(chapter.glob("[0-9]*_*.ipynb"))
        drawing = [p for p in lessons if VISUALIZER.search(p.read_text(encoding="utf-8"))]
        if lessons:
            chosen.append((drawing or lessons)[0])
    return chosen


def draws(source: str) -> bool:
    """A drawing cell: its last statement calls a visualizer (``strides.show(x)``, ``t.plot()``)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:  # IPython magics
        return False
    last = body[-1] if body else None
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)):
        return False
    name = ast.unparse(last.value.func)
    return name in DRAWING_CALLS or (name.endswith(".plot") and not name.startswith(("plt.", "ax.")))


def smoke_parameters(source: str) -> str:
    """The parameters cell with SMOKE = True (what a student does for a quick first pass)."""
    return re.sub(r"^SMOKE\s*=\s*False\b", "SMOKE = True", source, count=1, flags=re.M)


def correct_answer(source_lab: Path, grade_id: str) -> str:
    """The instructor's solution of ``grade_id``: the source cell without its solution markers."""
    nb = nbformat.read(source_lab, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return "\n".join(
        line
        for line in cell.source.splitlines()
        if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")
    )


def first_exercise(nb: nbformat.NotebookNode) -> tuple[int, int]:
    """Indices of the first solution cell and of the graded test cell that follows it."""
    meta = [c.metadata.get("nbgrader", {}) for c in nb.cells]
    solution = next(i for i, m in enumerate(meta) if m.get("solution") and not m.get("grade"))
    tests = next(i for i, m in enumerate(meta) if i > solution and m.get("grade"))
    return solution, tests


def stop_cell(nb: nbformat.NotebookNode) -> tuple[int, bool]:
    """Where the browser's run of a lesson stops, and whether that cell draws: the first code cell that
    draws (``draws``), else the first self-check, else the last code cell."""
    code = [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    drawing = [i for i, source in code if draws(source)]
    if drawing:
        return drawing[0], True
    checks = [i for i, source in code if SELF_CHECK.search(source)]
    return (checks or [code[-1][0]])[0], False


def run_lesson(page, server: LabServer, rel: str) -> list[str]:
    """Open a lesson, set SMOKE = True, run it up to its first picture (else self-check); problems found
    (empty when the student's path is fine)."""
    released = nbformat.read(server.workspace / rel, as_version=4)
    parameters = smoke_parameters(released.cells[0].source)
    if "SMOKE = True" not in parameters:
        return [f"{rel}: no `SMOKE = False` line in the parameters cell"]
    stop, stop_draws = stop_cell(released)
    book = LabNotebook(page.context, server, rel, page).open()
    problems = []
    try:
        book.set_source(0, parameters)
        book.select(stop)
        book.menu("Run", "Run All Above Selected Cell")
        book.wait_idle(timeout=LESSON_TIMEOUT)
        book.select(stop)
        book.run_selected()
        book.wait_idle(timeout=LESSON_TIMEOUT)
        saved = book.save()
        states = book.cell_states()
        assert len(states) == len(saved.cells), f"{rel}: {len(states)} cells shown, {len(saved.cells)} saved"
        problems += [f"{rel}: {e}" for e in error_outputs(saved, upto=stop + 1)]
        code = [i for i, c in enumerate(saved.cells[: stop + 1]) if c.cell_type == "code"]
        not_run = [i for i in code if saved.cells[i].execution_count is None]
        if not_run and not problems:
            problems.append(f"{rel}: cells {not_run} never ran")
        drawing = sorted(
            {i for i in picture_cells(saved) if i <= stop} | {i for i in code if draws(saved.cells[i].source)}
        )
        if VISUALIZER.search(str(released)) and not stop_draws:
            problems.append(f"{rel}: uses a visualizer but no cell's last line draws")
        for i in drawing:
            state = book.wait_for_pictures(i)
            if not state["pictures"] or state["broken"]:
                problems.append(
                    f"{rel}: cell {i} draws, but the page shows {state['pictures']} pictures "
                    f"({state['broken']} broken)"
                )
        name = rel.replace("/", "__").removesuffix(".ipynb")
        book.screenshot(SHOTS / f"{name}.png", cell=drawing[0] if drawing else None)
    finally:
        book.close()
    return problems


def solve_first_exercise(page, server: LabServer, rel: str) -> list[str]:
    """Run the visible tests blank (fail), paste the right answer, run it and its tests (pass)."""
    released = nbformat.read(server.workspace / rel, as_version=4)
    solution, tests = first_exercise(released)
    grade_id = released.cells[solution].metadata.nbgrader.grade_id
    assert "raise NotImplementedError()" in released.cells[solution].source, f"{rel}: {grade_id} is not blank"
    answer = correct_answer(COURSE / rel, grade_id)
    name = rel.replace("/", "__").removesuffix(".ipynb")
    book = LabNotebook(page.context, server, rel, page).open()
    problems = []
    try:
        book.select(tests)
        book.menu("Run", "Run All Above Selected Cell")
        book.wait_idle()
        book.select(tests)
        book.run_selected()
        book.wait_idle()
        blank = book.save()
        problems += [f"{rel} (blank): {e}" for e in error_outputs(blank, upto=tests)]
        if not any(o.output_type == "error" for o in blank.cells[tests].outputs):
            problems.append(f"{rel}: the visible tests of {grade_id} pass on the blank release")
        book.screenshot(SHOTS / f"{name}__blank.png", cell=tests)

        book.set_source(solution, answer)
        book.select(solution)
        book.run_selected()
        book.wait_idle()
        book.select(tests)
        book.run_selected()
        book.wait_idle()
        solved = book.save()
        problems += [f"{rel} (solved): {e}" for e in error_outputs(solved, upto=tests + 1)]
        runs = [solved.cells[i].execution_count for i in (solution, tests)]
        if None in runs or runs[1] <= runs[0]:
            problems.append(f"{rel}: expected the solution then its tests to run, execution counts {runs}")
        if answer.strip() not in solved.cells[solution].source:
            problems.append(f"{rel}: the saved solution cell does not hold the pasted answer")
        prompt = book.cell_states()[tests]["prompt"]
        if not re.fullmatch(r"\[\d+\]:", prompt):
            problems.append(f"{rel}: the test cell's prompt reads {prompt!r} after running")
        book.screenshot(SHOTS / f"{name}__solved.png", cell=tests)
    finally:
        book.close()
    return problems


def test_student_path_in_jupyterlab(tmp_path: Path):
    lessons = lesson_per_chapter(COURSE)
    assert lessons, f"no lessons under {COURSE}"
    problems: list[str] = []
    with lab_server(tmp_path, COURSE) as server, chromium.browser() as instance:
        context = instance.new_context(viewport=chromium.VIEWPORT)
        page = context.new_page()  # one JupyterLab for the whole path: notebooks open and close in it
        for lesson in lessons:
            problems += run_lesson(page, server, lesson.relative_to(COURSE).as_posix())
        lab_files = sorted(server.workspace.glob("*/lab_*.ipynb"))
        for lab in lab_files:
            problems += solve_first_exercise(page, server, lab.relative_to(server.workspace).as_posix())
        context.close()
    edited = {
        p: p.read_bytes()
        for p in [server.workspace / lesson.relative_to(COURSE) for lesson in lessons] + lab_files
    }
    rebuild = labs(
        "release",
        "--course",
        str(COURSE),
        "--root",
        str(tmp_path / "build" / "grading"),
        "--workspace",
        str(server.workspace),
        cwd=tmp_path,
    )
    assert rebuild.returncode == 0, rebuild.stdout + rebuild.stderr
    changed = [
        p.relative_to(server.workspace).as_posix()
        for p, content in edited.items()
        if p.read_bytes() != content
    ]
    assert not changed, f"rebuilding the release overwrote the student's work: {changed}"
    assert not problems, "\n".join(problems)


def test_static_course_opens_offline_with_every_picture(tmp_path: Path):
    pictures = ROOT / "tests" / "browser" / "fixtures" / "fx_pictures"
    result = labs(
        "run",
        str(pictures),
        str(FIXTURES / "course"),
        "--smoke",
        "--device",
        "cpu",
        "--html",
        "--report",
        str(tmp_path),
        "--jobs",
        "2",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    with chromium.browser() as instance:
        site = check_site(instance, tmp_path / "site" / "index.html", SHOTS / "site_fixture")
        context = chromium.offline_context(instance)
        page = context.new_page()
        page.goto((tmp_path / "site" / "index.html").as_uri())  # the reader's path, by clicking
        page.click("a:text-is('fx_pictures')")
        page.click("a:text-is('1_pictures.ipynb')")
        assert page.url.endswith("/site/fx_pictures/1_pictures.html"), page.url
        picture = page.locator(".jp-RenderedImage img").first
        assert picture.evaluate("img => img.complete && img.naturalWidth > 0")
        page.screenshot(path=str(SHOTS / "site_fx_pictures_clicked.png"))
        context.close()
        page_file = tmp_path / "site" / "fx_pictures" / "1_pictures.html"  # the check can fail: break one
        html = page_file.read_text(encoding="utf-8")
        png = 'src="data:image/png;base64,'
        page_file.write_text(html.replace(png, png + "AAAA", 1), encoding="utf-8")
        broken = check_site(instance, tmp_path / "site" / "index.html")
    assert site.ok, site.describe()
    assert len(site.chapters) == 2 and len(site.pages) == 3
    by_name = {Path(p.url).name: p for p in site.pages}
    assert by_name["1_pictures.html"].pictures == 3  # strides PNG, graph, explicit SVG
    assert by_name["1_pictures.html"].svgs >= 1
    assert not broken.ok and "image not decoded" in broken.describe(), broken.describe()
