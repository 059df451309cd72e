"""A class on JupyterHub: `labs hub` (a unix user per person, nbgrader's exchange), end to end in headless Chromium.

Every person signs in with their one-time password (NativeAuthenticator) and runs as their own unix user; the
instructor's `labs` commands run as the instructor's unix user, as they would in their terminal.
The instructor logs in (formgrader in the Nbgrader menu) and releases chapter 01 with `labs release --exchange`;
student ada logs in (only the Assignment List in the Nbgrader menu), fetches the chapter in the Assignments tab,
solves its first exercise in the lab and submits; student ben submits the blank lab. The instructor runs
`labs collect`, `labs grade` and `labs feedback --release`; ada fetches her feedback in the Assignments tab and
reads her points and why. Every step is asserted in the browser; screenshots in build/report/browser/hub/.
Afterwards the hub, the proxy, every single-user server and kernel have stopped.

Skips, saying why, without Chromium or configurable-http-proxy (make system-deps installs the proxy), or when not
root (a class makes unix users).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from labs.hub import PROXY_NAME
from tests.browser import chromium
from tests.browser.hub import (
    FETCHED,
    RELEASED,
    SUBMITTED,
    HubUser,
    RunningHub,
    hub_server,
    need_a_class,
    run_as,
    stop_hub,
    text_of,
    write_lab_settings,
)
from tests.browser.jupyterlab import LabNotebook
from tests.conftest import BIN, ROOT
from tests.test_browser import correct_answer, first_exercise

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.hub]

COURSE = ROOT / "course"
CHAPTER = "01_autograd"
LAB = f"{CHAPTER}/lab_autograd.ipynb"
SHOTS = ROOT / "build" / "report" / "browser" / "hub"
USERS = ("instructor", "ada", "ben")


@pytest.fixture(autouse=True)
def _tools_present() -> None:
    need_a_class(browser=True)


def run_labs(hub: RunningHub, *args: str) -> str:
    """``labs ARGS --course COURSE`` as the instructor types it in their terminal (their unix user); its output
    (the test fails with it on a non-zero exit)."""
    result = run_as("instructor", [str(BIN / "labs"), *args, "--course", str(hub.course)])
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"labs {' '.join(args)} exited {result.returncode}:\n{output}"
    return output


def instructor_sees_formgrader(user: HubUser) -> None:
    items = user.nbgrader_menu()
    user.shot("nbgrader_menu")
    assert "Formgrader" in items and "Assignment List" in items, items
    user.page.keyboard.press("Escape")


def formgrader_lists_submissions(user: HubUser) -> None:
    """Nbgrader > Formgrader: the chapter is in the gradebook with both submissions."""
    user.nbgrader_menu()
    user.page.locator("#jp-mainmenu-nbgrader .lm-Menu-itemLabel", has_text=re.compile("^Formgrader$")).click()
    frame = user.page.frame_locator("iframe").first
    row = frame.locator("tr", has_text=CHAPTER).first
    row.wait_for()
    cells = [" ".join(t.split()) for t in row.locator("td").all_inner_texts()]
    user.shot("formgrader")
    assert "2" in cells, f"formgrader's row for {CHAPTER}: {cells}"


def student_sees_only_assignments(user: HubUser) -> None:
    items = user.nbgrader_menu()
    user.shot("nbgrader_menu")
    assert items == ["Assignment List"], f"{user.name}'s Nbgrader menu: {items}"
    user.page.keyboard.press("Escape")


def fetch_chapter(user: HubUser) -> None:
    """Assignments tab: the chapter is released, Fetch, then it is downloaded with its lab."""
    user.open_assignments()
    assert "Fetch" in user.item(RELEASED, CHAPTER).inner_text()
    user.shot("released")
    user.click_in(RELEASED, CHAPTER, "Fetch")
    row = user.item(FETCHED, CHAPTER)
    assert "Submit" in row.inner_text()
    assert (user.server.workspace / LAB).is_file(), f"{user.name}: {LAB} not fetched into the home folder"
    user.shot("fetched")


def solve_first_exercise(user: HubUser) -> str:
    """Open the lab, paste the instructor's answer to the first exercise, save; returns its grade id."""
    released = nbformat.read(user.server.workspace / LAB, as_version=4)
    solution, _ = first_exercise(released)
    grade_id = released.cells[solution].metadata.nbgrader.grade_id
    answer = correct_answer(COURSE / LAB, grade_id)
    book = LabNotebook(user.context, user.server, LAB).open()
    try:
        book.set_source(solution, answer)
        saved = book.save()
        assert answer.strip() in saved.cells[solution].source, "the saved lab does not hold the pasted answer"
        book.screenshot(user.shots / f"{user.name}__solved.png", cell=solution)
    finally:
        book.page.close()
    return grade_id


def submit_chapter(user: HubUser) -> str:
    """Assignments tab: Submit; the submission appears with its timestamp. Returns the timestamp shown."""
    user.refresh_assignments()
    user.click_in(FETCHED, CHAPTER, "Submit")
    row = user.item(SUBMITTED, CHAPTER)
    stamp = row.locator(".nested_list_item .item_name").first
    stamp.wait_for()
    text = stamp.inner_text().strip()
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", text), f"{user.name}: submission shows {text!r}"
    user.shot("submitted")
    return text


def fetch_feedback(user: HubUser, hub: RunningHub) -> str:
    """Assignments tab: feedback is available, Fetch Feedback, view it; returns the feedback page's text."""
    user.refresh_assignments()
    row = user.item(SUBMITTED, CHAPTER)
    row.locator("text=(feedback available to fetch)").wait_for()
    user.shot("feedback_available")
    user.click_in(SUBMITTED, CHAPTER, "Fetch Feedback")
    view = row.locator("a", has_text="(view feedback)")
    view.wait_for()
    view.click()
    user.page.locator(".jp-DirListing-item", has_text="lab_autograd.html").wait_for()
    user.shot("feedback_fetched")
    feedback = sorted((hub.home(user.name) / CHAPTER / "feedback").glob("*/lab_autograd.html"))
    assert len(feedback) == 1, f"feedback files in {user.name}'s home: {feedback}"
    rel = feedback[0].relative_to(hub.home(user.name)).as_posix()
    page = user.context.new_page()
    page.goto(f"{hub.base}/user/{user.name}/files/{rel}")
    page.locator("text=Score:").first.wait_for()
    page.screenshot(path=str(user.shots / f"{user.name}__feedback.png"))
    page.get_by_text(re.compile(r"^every check passed")).first.scroll_into_view_if_needed()
    page.screenshot(path=str(user.shots / f"{user.name}__feedback_points.png"))
    text = text_of(page)
    page.close()
    return text


def test_a_class_on_jupyterhub(tmp_path: Path):
    shutil.rmtree(SHOTS, ignore_errors=True)  # the screenshots are this run's
    with hub_server(tmp_path) as hub, chromium.browser() as instance:
        for name in USERS:
            write_lab_settings(hub.home(name), owner=name)
        grading, exchange = hub.grading, str(hub.exchange)
        people = {name: HubUser(instance, hub, name, SHOTS) for name in USERS}
        instructor, ada, ben = (people[n] for n in USERS)

        instructor_sees_formgrader(instructor.login())
        out = run_labs(
            hub,
            "release",
            CHAPTER,
            "--exchange",
            "--exchange-root",
            exchange,
            "--root",
            str(grading),
            "--workspace",
            str(hub.home("instructor") / "student"),
        )
        assert f"released {CHAPTER} (lab_autograd.ipynb) to the exchange" in out, out

        student_sees_only_assignments(ada.login())
        fetch_chapter(ada)
        solved = solve_first_exercise(ada)
        submit_chapter(ada)

        student_sees_only_assignments(ben.login())
        fetch_chapter(ben)
        submit_chapter(ben)

        out = run_labs(hub, "collect", CHAPTER, "--root", str(grading), "--exchange-root", exchange)
        assert "2 submissions of 01_autograd" in out, out
        out = run_labs(
            hub,
            "grade",
            str(grading / "submitted"),
            "--chapter",
            CHAPTER,
            "--root",
            str(grading),
            "--jobs",
            "2",
        )
        assert re.search(r"ada\s*│\s*01_autograd/lab_autograd\s*│\s*graded\s*│\s*5/35", out), out
        assert re.search(r"ben\s*│\s*01_autograd/lab_autograd\s*│\s*graded\s*│\s*0/35", out), out
        out = run_labs(
            hub,
            "feedback",
            "--chapter",
            CHAPTER,
            "--root",
            str(grading),
            "--release",
            "--exchange-root",
            exchange,
        )
        assert f"released feedback on {CHAPTER} to ada, ben" in out, out
        formgrader_lists_submissions(instructor)

        text = fetch_feedback(ada, hub)
        assert "lab_autograd (Score: 5.0 / 35.0)" in text, text[:2000]
        assert "Grade cell: test_numerical_gradient Score: 5.0 / 5.0" in text, solved
        assert "every check passed" in text and "visible tests failed: NotImplementedError" in text, text[
            -3000:
        ]
        assert "/5 points" not in text  # the scores are nbgrader's, from the gradebook, and nowhere else
        for person in people.values():
            person.close()
        running = [" ".join(p.cmdline()) for p in hub.processes()]
        for what, count in (("bin/jupyterhub -f", 1), (PROXY_NAME, 1), ("jupyterhub-singleuser", len(USERS))):
            assert sum(what in line for line in running) == count, (what, running)
        left = stop_hub(hub)
    assert not left, f"still running after labs hub stopped: {left}"
    assert hub.process.returncode == 0, hub.log_tail()
