"""Files a student hands in that are not what they seem, and feedback that must be safe to open.

Unit tests read submissions without a sandbox; one `labs grade` batch then mixes an honest student
with symbolic links, a folder where the notebook should be, JSON that breaks parsers, nbgrader
metadata the source does not define and live markup: each bad one is its own one-line error, the
honest student keeps full marks, and no feedback or summary page carries a student's markup.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from tests.conftest import FIXTURES, labs_env
from tests.inprocess import labs_here

pytestmark = pytest.mark.grading

COURSE = FIXTURES / "course"
CHAPTER = "fx_basic"
LAB = COURSE / CHAPTER / "lab_basic.ipynb"
LABS = {CHAPTER: {"lab_basic.ipynb"}}
FULL = {"test_scale": 2.0, "test_relu_grad": 3.0}
ZERO = dict.fromkeys(FULL, 0.0)
ATTACK_KEY = "<img src=x onerror=alert(1)>"
MARKUP = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click me](javascript:alert(1))",
    "<a href='JaVa&#115;cript:alert(1)'>entity link</a>",
]
FORBIDDEN = ("<script>alert", "onerror=", "javascript:")


def _source() -> dict:
    return json.loads(LAB.read_text(encoding="utf-8"))


def _place(root: Path, student: str, text: str | None = None) -> Path:
    """``root/student/fx_basic/lab_basic.ipynb`` (its folders created), holding ``text`` if given."""
    path = root / student / CHAPTER / "lab_basic.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is not None:
        path.write_text(text, encoding="utf-8")
    return path


def _huge_int() -> str:
    nb = _source()
    nb["metadata"]["big"] = 0
    return json.dumps(nb).replace('"big": 0', '"big": ' + "7" * 5000)


def _deep() -> str:
    return '{"nbformat": 4, "nbformat_minor": 5, "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}"


def _bad_key() -> str:
    nb = _source()
    nb["cells"][0][ATTACK_KEY] = 1
    return json.dumps(nb)


def _with_cells(*cells: nbformat.NotebookNode) -> str:
    nb = nbformat.read(LAB, as_version=4)
    for cell in cells:
        cell.pop("id", None)  # the fixture is nbformat 4.4, without cell ids
    nb.cells += cells
    return nbformat.writes(nb)


def _unknown_grade_id() -> str:
    cell = nbformat.v4.new_code_cell("extra = 1")
    cell.metadata["nbgrader"] = {"solution": True, "grade_id": "unknown_id"}
    return _with_cells(cell)


def _markup() -> str:
    """The correct solutions plus student markup: markdown, a raw cell, HTML/JS outputs, widget state."""
    raw = nbformat.v4.new_raw_cell("<script>alert(1)</script><b onclick=alert(1)>raw</b>")
    code = nbformat.v4.new_code_cell("1")
    code.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"text/html": "<script>alert(1)</script>", "application/javascript": "alert(1)"},
        )
    ]
    nb = nbformat.reads(
        _with_cells(*[nbformat.v4.new_markdown_cell(m) for m in MARKUP], raw, code), as_version=4
    )
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {"state": {}, "x": "</script><script>alert(1)//"}
    }
    return nbformat.writes(nb)


def _raises_markup() -> str:
    """scale raises an error whose message is markup: it reaches feedback as the cell's why, as text."""
    nb = nbformat.read(LAB, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "scale")
    cell.source = "def scale(t, factor):\n    raise ValueError('<script>alert(1)</script>')\n"
    return nbformat.writes(nb)


def _duplicated_tests() -> str:
    """The honest notebook with its test cells copied, edited, above the real ones."""
    nb = nbformat.read(LAB, as_version=4)
    copies = [
        nbformat.from_dict(json.loads(json.dumps(c)))
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    ]
    for copy in copies:
        copy.source = "print('my own copy')"
        copy.metadata["nbgrader"]["points"] = 50
    nb.cells[:0] = copies
    return nbformat.writes(nb)


# --- reading one file -----------------------------------------------------------------------------


def test_source_notebook_reads(tmp_path: Path) -> None:
    from graders.grader.submissions import read_notebook

    nb, error = read_notebook(_place(tmp_path, "ada", LAB.read_text()))
    assert error == "" and nb is not None and len(nb.cells) == len(_source()["cells"])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_huge_int, "a number with more than 4300 digits"),
        (_deep, "nested too deeply"),
        (_bad_key, "invalid notebook (Additional properties are not allowed"),
        (lambda: "{ not json", "invalid JSON"),
        (lambda: json.dumps({"nbformat": 3}), "nbformat 3"),
        (lambda: "", "empty file"),
        (lambda: "\udce9", "not UTF-8"),
    ],
)
def test_unreadable_file_is_one_line_naming_it(tmp_path: Path, make, message: str) -> None:
    from graders.grader.submissions import read_notebook

    text = make()
    path = _place(tmp_path, "ada")
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    nb, error = read_notebook(path)
    assert nb is None and error.startswith(f"bad file: {path}: ") and message in error, error
    assert len(error.splitlines()) == 1 and len(error) < 400


def test_error_quotes_no_student_markup(tmp_path: Path) -> None:
    from graders.grader.submissions import read_notebook

    _, error = read_notebook(_place(tmp_path, "ada", _bad_key()))
    assert "at cells/0" in error
    assert not any(bad in error for bad in ("<", ">", "onerror=")), error


def test_folder_fifo_and_link_where_the_notebook_should_be(tmp_path: Path) -> None:
    from graders.grader.submissions import read_notebook

    folder = _place(tmp_path, "dir")
    folder.mkdir()
    fifo = _place(tmp_path, "fifo")
    os.mkfifo(fifo)
    link = _place(tmp_path, "link")
    link.symlink_to(LAB)
    assert read_notebook(folder) == (None, f"bad file: {folder}: is a folder, not a notebook file")
    assert read_notebook(fifo) == (None, f"bad file: {fifo}: not a regular file")
    assert read_notebook(link) == (None, f"bad file: {link}: is a symbolic link (refused)")


def test_malformed_nbgrader_metadata_is_dropped(tmp_path: Path) -> None:
    from graders.grader.submissions import read_notebook

    nb = _source()
    nb["cells"][0]["metadata"]["nbgrader"] = {"grade_id": ["not", "hashable"], "solution": True}
    nb["cells"][1]["metadata"]["nbgrader"] = "not a mapping"
    read, error = read_notebook(_place(tmp_path, "ada", json.dumps(nb)))
    assert (
        error == "" and "nbgrader" not in read.cells[0].metadata and "nbgrader" not in read.cells[1].metadata
    )


# --- collecting a tree ----------------------------------------------------------------------------


def _tree(root: Path) -> None:
    _place(root, "honest", LAB.read_text())
    _place(root, "link-file").symlink_to(LAB)
    (root / "link-chapter").mkdir()
    (root / "link-chapter" / CHAPTER).symlink_to(root / "honest" / CHAPTER)
    (root / "link-student").symlink_to(root / "honest")
    (root / "dangling").symlink_to(root / "nowhere")
    _place(root, "folder").mkdir()
    _place(root, "huge-int", _huge_int())
    _place(root, "deep", _deep())
    _place(root, "bad-key", _bad_key())


def test_collect_refuses_links_and_reads_the_rest(tmp_path: Path) -> None:
    from graders.grader.submissions import collect

    _tree(tmp_path)
    found = {s.student: s for s in collect(tmp_path, LABS).submissions}
    assert found["honest"].nb is not None and found["honest"].error == ""
    refused = {
        "link-file": tmp_path / "link-file" / CHAPTER / "lab_basic.ipynb",
        "link-chapter": tmp_path / "link-chapter" / CHAPTER,
        "link-student": tmp_path / "link-student",
        "dangling": tmp_path / "dangling",
    }
    for student, path in refused.items():
        assert found[student].nb is None, student
        assert found[student].error == f"bad file: {path}: is a symbolic link (refused)"
    for student in ("folder", "huge-int", "deep", "bad-key"):
        assert found[student].nb is None and found[student].error.startswith("bad file: "), student
        assert "lab_basic.ipynb" in found[student].error
    assert set(found) == {"honest", *refused, "folder", "huge-int", "deep", "bad-key"}


def test_collect_lists_stray_notebooks_in_plain_words(tmp_path: Path) -> None:
    from graders.grader.submissions import collect

    _place(tmp_path, "ada", LAB.read_text())
    (tmp_path / "ada" / CHAPTER / "[bold]\x1b[31m.ipynb").write_text("{}")
    found = collect(tmp_path, LABS)
    assert len(found.rejected) == 1 and "not a lab of fx_basic" in found.rejected[0]
    assert "\x1b" not in found.rejected[0] and "[bold]" not in found.rejected[0]


def test_zip_refuses_symlink_entries(tmp_path: Path) -> None:
    from graders.grader.submissions import unpack

    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(LAB, "ada/fx_basic/lab_basic.ipynb")
        link = zipfile.ZipInfo("eve/fx_basic/lab_basic.ipynb")
        link.external_attr = 0o120777 << 16
        zipped.writestr(link, str(LAB))
        zipped.writestr("ada/fx_basic/lab_basic.ipynb/nested", "a file below a file")
    errors = unpack(archive, tmp_path / "out")
    assert (tmp_path / "out" / "ada" / CHAPTER / "lab_basic.ipynb").read_bytes() == LAB.read_bytes()
    assert not (tmp_path / "out" / "eve").exists()
    assert any("eve/fx_basic/lab_basic.ipynb" in e and "is a symbolic link (refused)" in e for e in errors), (
        errors
    )
    assert any("nested" in e and "refused" in e for e in errors) and len(errors) == 2


def test_hard_link_is_refused(tmp_path: Path) -> None:
    from graders.grader.submissions import read_notebook

    original = tmp_path / "instructor.ipynb"
    shutil.copy(LAB, original)
    linked = _place(tmp_path, "hardlink")
    os.link(original, linked)
    assert (
        read_notebook(linked)[1]
        == f"bad file: {linked}: has other hard links (refused: it may be someone else's file)"
    )


def test_zip_that_unpacks_too_large_is_refused_past_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graders.grader import submissions

    monkeypatch.setattr(submissions, "MAX_ZIP_BYTES", 3 * LAB.stat().st_size // 2)
    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.write(LAB, "ada/fx_basic/lab_basic.ipynb")
        zipped.write(LAB, "ben/fx_basic/lab_basic.ipynb")
    errors = submissions.unpack(archive, tmp_path / "out")
    assert (tmp_path / "out" / "ada" / CHAPTER / "lab_basic.ipynb").is_file()
    assert not (tmp_path / "out" / "ben").exists()
    assert len(errors) == 1 and "ben/fx_basic/lab_basic.ipynb" in errors[0] and "unpacks to over" in errors[0]


# --- feedback notebook ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab():
    from graders.grader.grading import load_lab

    return load_lab(LAB)


def _feedback(lab, text: str, error: str = ""):
    from graders.grader.results import CellGrade, NotebookGrade
    from graders.nbgrader.feedback import feedback_notebook

    grade = NotebookGrade(
        "ada",
        CHAPTER,
        "lab_basic",
        "graded",
        error,
        [
            CellGrade("test_scale", 2.0, 0.0, "<script>alert(1)</script>"),
            CellGrade("test_relu_grad", 3.0, 3.0),
        ],
    )
    return feedback_notebook(lab, grade, nbformat.reads(text, as_version=4))


def test_feedback_keeps_only_the_sources_nbgrader_metadata(lab) -> None:
    nb = _feedback(lab, _duplicated_tests())
    unknown = _feedback(lab, _unknown_grade_id())
    source_ids = [c.metadata["nbgrader"]["grade_id"] for c in lab.source.cells if "nbgrader" in c.metadata]
    for result in (nb, unknown):
        ids = [c.metadata["nbgrader"]["grade_id"] for c in result.cells if "nbgrader" in c.metadata]
        assert ids == source_ids  # each once, none of the student's
    source_meta = {
        c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]
        for c in lab.source.cells
        if "nbgrader" in c.metadata
    }
    assert all(
        c.metadata["nbgrader"] == source_meta[c.metadata["nbgrader"]["grade_id"]]
        for c in nb.cells
        if "nbgrader" in c.metadata
    )
    assert [c.source for c in nb.cells[:2]] == [
        "print('my own copy')"
    ] * 2  # the copies are the student's code
    assert nb.metadata == lab.source.metadata


def test_feedback_notebook_has_no_live_markup(lab) -> None:
    nb = _feedback(lab, _markup(), error=f"bad file: x: {ATTACK_KEY} [link](javascript:alert(1))")
    assert nb.cells[0].source == (
        "<div><p><strong>Grading problem:</strong> bad file: x: &lt;img src=x "
        "onerror=alert(1)&gt; [link](javascript:alert(1))</p></div>"
    )  # text, not markup
    markdown = "\n".join(c.source for c in nb.cells[1:] if c.cell_type in ("markdown", "raw"))
    assert "<script" not in markdown and "onerror" not in markdown and "onclick" not in markdown
    assert "href" not in markdown.replace('href="#', "")  # no student link survives with a scheme
    assert "\n" not in "".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert all(
        not c.outputs or c.outputs[0].output_type == "stream" for c in nb.cells if c.cell_type == "code"
    )
    assert "widgets" not in nb.metadata


def test_markdown_renders_after_sanitising(lab) -> None:
    nb = _feedback(
        lab,
        _with_cells(
            nbformat.v4.new_markdown_cell(
                "# Notes\n\n> quoted\n\n```\na < b\n\n\nc\n```\n[docs](https://pytorch.org)"
            )
        ),
    )
    html = nb.cells[-1].source
    assert (
        "<h1>Notes</h1>" in html
        and "<blockquote>" in html
        and '<a href="https://pytorch.org">docs</a>' in html
    )
    assert "a &lt; b<br><br><br>c" in html


def test_feedback_notebook_is_bounded(lab) -> None:
    """Deep nesting and megabytes of cells cost seconds each to sanitise: feedback shows a bounded part."""
    cells = [
        nbformat.v4.new_markdown_cell("<div>" * 50_000),
        nbformat.v4.new_raw_cell("<b>" * 50_000),
        nbformat.v4.new_code_cell("x = 1\n" * 1_000_000),
    ]
    nb = _feedback(lab, _with_cells(*cells))
    assert (
        nb.cells[-3].source.startswith("<div><pre>&lt;div&gt;")
        and "more characters not shown]" in nb.cells[-3].source
    )
    assert nb.cells[-2].source.startswith("&lt;b&gt;")
    assert len(nb.cells[-1].source) < 25_000 and nb.cells[-1].source.endswith("more characters not shown]")


def test_feedback_notebook_shows_a_bounded_number_of_cells(lab) -> None:
    nb = nbformat.read(LAB, as_version=4)
    filler = [nbformat.v4.new_markdown_cell("filler") for _ in range(5_000)]
    for cell in filler:
        cell.pop("id")
    nb.cells[:0] = filler
    shown = _feedback(lab, nbformat.writes(nb))
    assert len(shown.cells) < 1_100 and "more cells not shown" in shown.cells[-1].source
    assert [c.metadata["nbgrader"]["grade_id"] for c in shown.cells if "nbgrader" in c.metadata] == [
        "scale",
        "test_scale",
        "relu_grad",
        "test_relu_grad",
    ]


def test_sanitiser_judges_urls_as_a_browser_does() -> None:
    from graders.nbgrader.nbgrader_course import sanitizer

    clean = sanitizer().sanitize_html_tags
    for url in (
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "java&#115;cript:alert(1)",
        " java\tscript:9",
        "javascript:9",
        "vbscript:x",
        "data:text/html;base64,PHNjcmlwdD4=",
    ):
        assert clean(f'<a href="{url}">x</a>') == "<a>x</a>", url
    assert (
        clean('<a href="https://x.org/a?b=1">x</a><a href="#top">t</a>')
        == '<a href="https://x.org/a?b=1">x</a><a href="#top">t</a>'
    )


def test_nbgrader_feedback_sanitises_too(tmp_path: Path) -> None:
    """A second layer, for autograded notebooks written by anything else: nbgrader's own rendering."""
    from nbconvert.preprocessors.sanitize import SanitizeHTML
    from traitlets.config import Config

    from graders.nbgrader.course_root import CourseRoot
    from graders.nbgrader.nbgrader_course import nbgrader_config

    config = nbgrader_config(tmp_path)
    assert SanitizeHTML in config.GenerateFeedback.preprocessors and config.SanitizeHTML.enabled
    written = Config()  # what nbgrader's own tools (formgrader's feedback) read from the course root
    exec(CourseRoot(tmp_path).config_text(), {"get_config": lambda: written})
    assert set(written) <= set(config) and all(written[s] == config[s] for s in written), written
    assert SanitizeHTML in written.GenerateFeedback.preprocessors and written.SanitizeHTML.enabled
    sanitizer = SanitizeHTML(config=config)
    assert (
        sanitizer.enabled
        and sanitizer.sanitize_html_tags("<b onclick=x>b</b><script>s</script>") == "<b>b</b>s"
    )


# --- gradebook and exports, one notebook at a time ------------------------------------------------


def test_a_new_gradebook_is_stamped_with_the_schema_head_without_a_subprocess(
    tmp_path: Path, monkeypatch
) -> None:
    import subprocess

    from nbgrader.dbutil import write_alembic_ini

    from graders.nbgrader.nbgrader_course import gradebook_schema_head, open_gradebook

    write_alembic_ini(str(tmp_path / "alembic.ini"), f"sqlite:///{tmp_path / 'scratch.db'}")
    heads = subprocess.run(
        ["alembic", "-c", str(tmp_path / "alembic.ini"), "heads"],
        capture_output=True,
        text=True,
        env=labs_env(),
        check=True,
        timeout=60,
    )
    assert (
        heads.stdout.split()[0] == gradebook_schema_head()
    )  # what nbgrader's own subprocess would have said

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"a subprocess for a new gradebook: {args}")

    monkeypatch.setattr(subprocess, "check_output", no_subprocess)
    with open_gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}"):
        pass
    stamped = (
        sqlite3.connect(tmp_path / "gradebook.db")
        .execute("SELECT version_num FROM alembic_version")
        .fetchall()
    )
    assert stamped == [(gradebook_schema_head(),)]


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's session bookkeeping
def test_record_keeps_the_others_when_one_fails(tmp_path: Path, lab) -> None:
    from graders.grader.results import CellGrade, NotebookGrade
    from graders.nbgrader.gradebook import ensure_assignments, record
    from graders.nbgrader.nbgrader_course import open_gradebook

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    ensure_assignments(tmp_path, url, {(CHAPTER, "lab_basic"): lab}, {CHAPTER: [LAB]})
    good = NotebookGrade("ada", CHAPTER, "lab_basic", "graded", cells=[CellGrade("test_scale", 2.0, 2.0)])
    bad = NotebookGrade(
        "ben",
        CHAPTER,
        "lab_basic",
        "graded",
        cells=[CellGrade("test_scale", 2.0, 2.0), CellGrade("no_such_cell", 1.0, 1.0)],
    )
    later = NotebookGrade("cy", CHAPTER, "lab_basic", "graded", cells=[CellGrade("test_relu_grad", 3.0, 3.0)])
    failed = record(url, [good, bad, later])
    assert [(g.student, why.split(":")[0]) for g, why in failed] == [("ben", "MissingEntry")]
    with open_gradebook(url) as gradebook:

        def score(student: str, cell: str):
            return gradebook.find_grade(cell, "lab_basic", CHAPTER, student).auto_score

        assert score("ada", "test_scale") == 2.0 and score("cy", "test_relu_grad") == 3.0
        assert score("ben", "test_scale") is None  # rolled back


# --- one batch through `labs grade` and `labs feedback` -------------------------------------------


BAD = {  # student -> what the one-line error must say, besides the file
    "link-file": "is a symbolic link (refused)",
    "link-chapter": "is a symbolic link (refused)",
    "link-student": "is a symbolic link (refused)",
    "folder": "is a folder, not a notebook file",
    "huge-int": "a number with more than 4300 digits",
    "deep": "nested too deeply",
    "bad-key": "invalid notebook (Additional properties are not allowed",
}
GOOD = {
    "honest": LAB.read_text,
    "markup": _markup,
    "unknown-id": _unknown_grade_id,
    "duplicated": _duplicated_tests,
}


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("files")
    subs, root = tmp / "submitted", tmp / "grading"
    _tree(subs)
    for student, make in GOOD.items():
        if student != "honest":
            _place(subs, student, make())
    _place(subs, "raises-markup", _raises_markup())
    proc = labs_here(
        "grade",
        str(subs),
        "--course",
        str(COURSE),
        "--chapter",
        CHAPTER,
        "--root",
        str(root),
        "--jobs",
        "2",
        "--timeout",
        "30",
        "--memory",
        "1024",
    )
    results = root / "reports" / "results.json"
    assert results.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    grades = {g["student"]: g for g in json.loads(results.read_text())["grades"]}
    return {"proc": proc, "root": root, "grades": grades}


def _cells(grade: dict) -> dict[str, float]:
    return {c["grade_id"]: c["score"] for c in grade["cells"]}


def test_batch_completes_with_exit_1_and_no_traceback(batch: dict) -> None:
    proc = batch["proc"]
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert set(batch["grades"]) == {*BAD, *GOOD, "dangling", "raises-markup"}


def test_honest_and_harmless_students_get_full_marks(batch: dict) -> None:
    for student in GOOD:
        grade = batch["grades"][student]
        assert grade["status"] == "graded" and _cells(grade) == FULL, grade


@pytest.mark.parametrize("student", sorted(BAD))
def test_bad_file_is_its_own_one_line_error(batch: dict, student: str) -> None:
    grade = batch["grades"][student]
    assert grade["status"] == "error" and _cells(grade) == ZERO, grade
    error = grade["error"]
    assert error.startswith("bad file: ") and BAD[student] in error and len(error.splitlines()) == 1, error
    assert f"/{student}" in error
    assert student in batch["proc"].stdout


def test_gradebook_holds_the_honest_score(batch: dict, tmp_path: Path) -> None:
    from graders.nbgrader.nbgrader_course import open_gradebook

    with open_gradebook(f"sqlite:///{batch['root'] / 'gradebook.db'}") as gradebook:
        notebook = gradebook.find_submission_notebook("lab_basic", CHAPTER, "honest")
        assert {g.name: g.auto_score for g in notebook.grades} == FULL
        notebook = gradebook.find_submission_notebook("lab_basic", CHAPTER, "link-file")
        assert {g.name: g.auto_score for g in notebook.grades} == ZERO
    proc = labs_here(
        "export", "--format", "csv", "--out", str(tmp_path / "grades.csv"), "--root", str(batch["root"])
    )
    assert proc.returncode == 0, proc.stderr
    assert any(
        line.startswith("honest,fx_basic,lab_basic,") and line.endswith(",5.0,5.0")
        for line in (tmp_path / "grades.csv").read_text().splitlines()
    )


@pytest.fixture(scope="module")
def feedback(batch: dict) -> dict:
    proc = labs_here("feedback", "--course", str(COURSE), "--chapter", CHAPTER, "--root", str(batch["root"]))
    return {"proc": proc, "pages": sorted((batch["root"] / "feedback").glob(f"*/{CHAPTER}/*.html"))}


def test_feedback_for_everyone_graded(batch: dict, feedback: dict) -> None:
    proc = feedback["proc"]
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    rendered = {p.parent.parent.name for p in feedback["pages"]}
    assert {"honest", "markup", "unknown-id", "duplicated"} <= rendered
    assert rendered == set(batch["grades"])
    markup = (batch["root"] / "feedback" / "markup" / CHAPTER / "lab_basic.html").read_text()
    assert "entity link" in markup and "click me" in markup and "5 / 5" in markup.replace(".0", "")
    raises = batch["grades"]["raises-markup"]
    assert (
        _cells(raises) == {"test_scale": 0.0, "test_relu_grad": 3.0}
        and "<script>alert(1)</script>" in raises["cells"][0]["why"]
    )
    page = (batch["root"] / "feedback" / "raises-markup" / CHAPTER / "lab_basic.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the why, as text


class _LiveMarkup(HTMLParser):
    """Collects what in a page could run: event handlers, script URLs, scripts that are not the page's own."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.script = tag == "script"
        for name, value in attrs:
            url = re.sub(r"[\x00-\x20]", "", value or "").lower()
            if name.startswith("on") or url.startswith(("javascript:", "vbscript:", "data:text")):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_data(self, data: str) -> None:
        if self.script and "alert" in data:
            self.found.append(f"script: {data[:80]!r}")

    def handle_endtag(self, tag: str) -> None:
        self.script = False


def test_no_page_carries_student_markup(batch: dict, feedback: dict) -> None:
    pages = [*feedback["pages"], batch["root"] / "reports" / "summary.html"]
    assert len(pages) > len(GOOD)
    template = (batch["root"] / "feedback" / "honest" / CHAPTER / "lab_basic.html").read_text().lower()
    for page in pages:
        text = page.read_text(encoding="utf-8").lower()
        parser = _LiveMarkup()
        parser.feed(text)
        assert parser.found == [], page
        for bad in FORBIDDEN:  # the page's own CSS has a[href^="javascript:"]: as often as the source's page
            assert text.count(bad) == (
                template.count(bad) if page.suffix == ".html" and "feedback" in page.parts else 0
            ), (page, bad)


def test_feedback_failure_is_one_student_and_exit_1(batch: dict, feedback: dict) -> None:
    ghost = batch["root"] / "autograded" / "ghost" / CHAPTER
    ghost.mkdir(parents=True)
    shutil.copy(batch["root"] / "autograded" / "honest" / CHAPTER / "lab_basic.ipynb", ghost)
    try:
        proc = labs_here(
            "feedback", "--course", str(COURSE), "--chapter", CHAPTER, "--root", str(batch["root"])
        )
    finally:
        shutil.rmtree(ghost.parent)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("grader error:")]
    assert len(lines) == 1 and "feedback for ghost/fx_basic failed" in lines[0], proc.stderr
    assert (
        "failed" in proc.stdout
        and (batch["root"] / "feedback" / "markup" / CHAPTER / "lab_basic.html").is_file()
    )


def test_feedback_for_a_student_never_graded_names_those_who_were(batch: dict) -> None:
    def feedback_of(student: str):
        root = str(batch["root"])
        return labs_here(
            "feedback", "--course", str(COURSE), "--chapter", CHAPTER, "--root", root, "--student", student
        )

    proc = feedback_of("honst")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    line = " ".join(proc.stderr.split())
    assert (
        line.startswith(f"error: honst: no graded submission of {CHAPTER} (graded: ") and "honest" in line
    ), line
    one = feedback_of("honest")
    assert one.returncode == 0 and "1 feedback files" in " ".join(one.stdout.split()), one.stdout + one.stderr


def test_grader_error_after_grading_is_that_notebooks_status(batch: dict, tmp_path: Path) -> None:
    """A gradebook that rejects one student's scores: that notebook is a grader error, the rest recorded."""
    root = tmp_path / "grading"
    shutil.copytree(batch["root"], root, ignore=shutil.ignore_patterns("feedback", "autograded", "logs"))
    theirs = (
        "(select sn.id from submitted_notebook sn join submitted_assignment sa on sn.assignment_id = sa.id "
        "where sa.student_id = 'duplicated')"
    )
    with sqlite3.connect(root / "gradebook.db") as db:
        db.execute(f"update grade set auto_score = null where notebook_id in {theirs}")  # so recording writes
        db.execute(
            f"create trigger refuse before update of auto_score on grade when new.notebook_id in {theirs} "
            "begin select raise(abort, 'refused by test'); end"
        )
    subs = tmp_path / "submitted"
    _place(subs, "honest", LAB.read_text())
    _place(subs, "duplicated", _duplicated_tests())
    proc = labs_here(
        "grade",
        str(subs),
        "--course",
        str(COURSE),
        "--chapter",
        CHAPTER,
        "--root",
        str(root),
        "--jobs",
        "1",
        "--timeout",
        "30",
        "--memory",
        "1024",
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    grades = {g["student"]: g for g in json.loads((root / "reports" / "results.json").read_text())["grades"]}
    assert grades["honest"]["status"] == "graded"
    assert grades["duplicated"]["status"] == "grader error"
    assert grades["duplicated"]["error"].startswith(
        "grader error: recording in the gradebook of duplicated/fx_basic/lab_basic"
    )
    assert (root / "autograded" / "honest" / CHAPTER / "lab_basic.ipynb").is_file()
    assert not (root / "autograded" / "duplicated" / CHAPTER / "lab_basic.ipynb").exists()
