"""Feedback for sandboxed grades: an "autograded" notebook per submission, from which nbgrader renders
the feedback HTML (the scores themselves are in the gradebook: :mod:`graders.nbgrader.gradebook`).

The autograded notebook holds the student's cells, test cells as the student saw them (hidden
tests removed) and, under each test cell, what the grader found: never hidden code or inputs. It is
also what nbgrader renders (feedback, formgrader), so nothing a student wrote stays live markup:
markdown is rendered and sanitised here, raw cells sanitised, outputs of the student's code dropped,
and nbgrader metadata exists only on the cells the source defines, taken from the source.
"""

from __future__ import annotations

import copy
import html
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors.sanitize import SanitizeHTML
from nbgrader.api import MissingEntry

from graders.coursedir import nbgrader_meta, visible_part
from graders.grader.cells import TestCell
from graders.grader.results import CellGrade, NotebookGrade
from graders.grader.submissions import plain
from graders.nbgrader import nbgrader_course as course
from graders.nbgrader.course_root import CourseRoot
from graders.nbgrader.gradebook import reason
from graders.nbgrader.reports import MANUAL, student_view

if TYPE_CHECKING:
    from graders.grader.grading import Lab

PRE_BLOCK = re.compile(r"(<pre\b.*?</pre>)", re.S)
# Feedback shows this much of a student's notebook: highlighting and sanitising take seconds per 100 kB
# (and sanitising grows with the square of nesting), and one notebook must not stall everyone's feedback.
MAX_CELL_CHARS = 20_000
MAX_SHOWN_CHARS = 200_000
MAX_CELL_TAGS = 1_000
MAX_SHOWN_CELLS = 1_000


def source_metadata(source: nbformat.NotebookNode) -> dict[str, tuple[str, dict]]:
    """grade_id -> (cell type, nbgrader metadata) of every cell of the source that has a grade_id."""
    return {
        meta["grade_id"]: (cell.cell_type, dict(meta))
        for cell in source.cells
        if isinstance((meta := nbgrader_meta(cell)).get("grade_id"), str)
    }


def owned_cells(nb: nbformat.NotebookNode, source: nbformat.NotebookNode) -> dict[int, dict]:
    """Cell index -> the source's nbgrader metadata, for the cells that stand for a source cell: of the
    cells carrying a source grade_id and the source cell's type, the last one (as grading counts it)."""
    defined = source_metadata(source)
    owner = {}
    for index, cell in enumerate(nb.cells):
        grade_id = nbgrader_meta(cell).get("grade_id")
        if isinstance(grade_id, str) and grade_id in defined and defined[grade_id][0] == cell.cell_type:
            owner[grade_id] = index
    return {index: copy.deepcopy(defined[grade_id][1]) for grade_id, index in owner.items()}


def trim(nb: nbformat.NotebookNode, owned: dict[int, dict]) -> dict[int, dict]:
    """Keep the first MAX_SHOWN_CELLS cells and every owned cell after them, noting how many went;
    returns ``owned`` renumbered for the cells kept."""
    keep = [i for i in range(len(nb.cells)) if i < MAX_SHOWN_CELLS or i in owned]
    if len(keep) == len(nb.cells):
        return owned
    note = nbformat.v4.new_markdown_cell(
        f"<div><p>({len(nb.cells) - len(keep)} more cells not shown)</p></div>"
    )
    if nb.nbformat_minor < 5:  # cell ids came with nbformat 4.5
        note.pop("id")
    nb.cells = [nb.cells[i] for i in keep] + [note]
    return {new: owned[old] for new, old in enumerate(keep) if old in owned}


def feedback_notebook(
    lab: Lab, grade: NotebookGrade, submitted: nbformat.NotebookNode | None
) -> nbformat.NotebookNode:
    """The submission as nbgrader's feedback shows it: test cells restored, results under them, only the
    source's nbgrader metadata, and no student markup that could run in a browser."""
    grade = student_view(grade)
    nb = nbformat.from_dict(json.loads(json.dumps(submitted if submitted is not None else lab.source)))
    nb.metadata = nbformat.from_dict(
        copy.deepcopy(lab.source.metadata)
    )  # the student's could carry widget state
    owned = trim(nb, owned_cells(nb, lab.source))
    results = {c.grade_id: c for c in grade.cells}
    tests = {t.grade_id: t for t in lab.tests}
    sanitizer = course.sanitizer()
    room = MAX_SHOWN_CHARS
    for index, cell in enumerate(nb.cells):
        meta = owned.get(index, {})
        cell.metadata = nbformat.from_dict({"nbgrader": meta} if meta else {})
        if submitted is None and meta.get("solution"):
            cell.source = (
                "# (no gradable submission)" if cell.cell_type == "code" else "(no gradable submission)"
            )
        cell.source = shown(cell.source, room)
        room = max(0, room - len(cell.source))
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if meta.get("grade_id") in tests:
                _show_result(cell, tests[meta["grade_id"]], results.get(meta["grade_id"]))
        elif cell.cell_type == "markdown":
            cell.source = markdown_block(cell, sanitizer)
            cell.pop("attachments", None)
        else:
            cell.source = raw_html(cell.source, sanitizer)
    if grade.error:
        problem = (
            f"<p><strong>Grading problem:</strong> {html.escape(shown(grade.error, MAX_CELL_CHARS))}</p>"
        )
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(html_block(problem, sanitizer)))
        if nb.nbformat_minor < 5:  # cell ids came with nbformat 4.5
            nb.cells[0].pop("id")
    return nb


def _show_result(cell: nbformat.NotebookNode, test: TestCell, result: CellGrade | None) -> None:
    """A test cell as the student saw it, with why it lost points as its output (escaped when rendered); the
    score is the gradebook's, which nbgrader shows beside the cell (a manual score included)."""
    cell.source = visible_part(test.visible_source)
    text = (
        (shown(result.why, MAX_CELL_CHARS) if result.why else "every check passed")
        if result
        else "not graded"
    )
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")]


def shown(source: str, room: int) -> str:
    """``source`` cut to what feedback shows of one cell, within ``room`` characters left for the notebook."""
    keep = max(0, min(len(source), MAX_CELL_CHARS, room))
    return (
        source
        if keep == len(source)
        else f"{source[:keep]}\n[... {len(source) - keep} more characters not shown]"
    )


def markdown_block(cell: nbformat.NotebookNode, sanitizer: SanitizeHTML) -> str:
    """A student's markdown cell as safe HTML (see html_block); shown as text when it renders to more
    elements than feedback sanitises."""
    markup = render_markdown(cell)
    if markup.count("<") > MAX_CELL_TAGS:
        markup = f"<pre>{html.escape(cell.source)}</pre>"
    return html_block(markup, sanitizer)


def raw_html(source: str, sanitizer: SanitizeHTML) -> str:
    """A raw cell (which HTML output includes as it is) sanitised, or escaped when it has too many tags."""
    return sanitizer.sanitize_html_tags(source) if source.count("<") <= MAX_CELL_TAGS else html.escape(source)


def render_markdown(cell: nbformat.NotebookNode) -> str:
    """A markdown cell rendered to HTML as nbconvert renders it (not yet sanitised); its text, escaped,
    when it cannot be rendered."""
    try:
        renderer = IPythonRenderer(
            escape=False, exclude_anchor_links=True, attachments=cell.get("attachments", {})
        )
        return MarkdownWithMath(renderer=renderer).render(cell.source)
    except Exception:  # noqa: BLE001 - a cell that breaks the renderer (nesting, attachments) is shown as text
        return f"<pre>{html.escape(cell.source)}</pre>"


def html_block(markup: str, sanitizer: SanitizeHTML) -> str:
    """``markup`` sanitised, as a markdown cell source that markdown passes through unchanged: one
    ``<div>`` on one line (a blank line would end the HTML block and let markdown parse the rest)."""
    clean = sanitizer.sanitize_html_tags(markup).replace("\r", "")
    parts = PRE_BLOCK.split(clean)
    return (
        "<div>"
        + "".join(p.replace("\n", "<br>") if i % 2 else p.replace("\n", " ") for i, p in enumerate(parts))
        + "</div>"
    )


def write_autograded(
    root: Path, lab: Lab, grade: NotebookGrade, submitted: nbformat.NotebookNode | None
) -> Path:
    """Save the feedback notebook where nbgrader's generate_feedback looks for it (whole or not at all)."""
    path = CourseRoot(root).autograded_notebook(grade.student, grade.chapter, grade.notebook)
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{grade.notebook}.ipynb.partial"  # nbgrader ignores dot files
    try:
        nbformat.write(feedback_notebook(lab, grade, submitted), partial)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def remove_autograded(root: Path, grade: NotebookGrade) -> None:
    """Remove a notebook's autograded copy, so no stale feedback is rendered from it."""
    CourseRoot(root).autograded_notebook(grade.student, grade.chapter, grade.notebook).unlink(missing_ok=True)


def manual_cells(db_url: str, chapter: str) -> dict[tuple[str, str], set[str]]:
    """(student, notebook) -> the grade_ids of ``chapter`` whose score the instructor set by hand, read from the
    gradebook once for the whole chapter."""
    with course.open_gradebook(db_url) as gradebook:
        try:
            assignment = gradebook.find_assignment(chapter)
        except MissingEntry:
            return {}
        return {
            (sub.student.id, nb.name): {g.name for g in nb.grades if g.manual_score is not None}
            for sub in assignment.submissions
            for nb in sub.notebooks
        }


def mark_manual_scores(
    root: Path, chapter: str, student: str, manual: dict[tuple[str, str], set[str]]
) -> None:
    """Say, under each test cell of the student's autograded notebooks, when its score was set by hand (the
    automatic reason kept after it), so the text beside nbgrader's score never contradicts it."""
    for path in sorted((CourseRoot(root).autograded / student / chapter).glob("*.ipynb")):
        marked = manual.get((student, path.stem), set())
        nb = nbformat.read(path, as_version=4)
        changed = False
        for cell in nb.cells:
            grade_id = nbgrader_meta(cell).get("grade_id")
            if cell.cell_type != "code" or not cell.get("outputs") or not isinstance(grade_id, str):
                continue
            text = str(cell.outputs[0].get("text", ""))
            shown = (MANUAL + text.removeprefix(MANUAL)) if grade_id in marked else text.removeprefix(MANUAL)
            if shown != text:
                cell.outputs[0]["text"], changed = shown, True
        if changed:
            nbformat.write(nb, path)


def generate_feedback(
    root: Path, db_url: str, chapter: str, student: str | None = None
) -> tuple[list[Path], list[str]]:
    """nbgrader's feedback HTML for autograded submissions of ``chapter``, one student at a time;
    returns the files and a ``grader error: ...`` line per student whose feedback failed."""
    api = course.api(root, db_url)
    students = [name for name in graded_students(root, chapter) if student in (None, name)]
    files, errors = [], []
    manual = manual_cells(db_url, chapter)
    for name in students:
        try:
            mark_manual_scores(root, chapter, name, manual)
            course.require_success(
                api.generate_feedback(chapter, name, force=True), f"generate_feedback {name}"
            )
        except Exception as err:  # noqa: BLE001 - one student's feedback failing leaves the others rendered
            errors.append(f"grader error: feedback for {plain(name)}/{chapter} failed ({reason(err)})")
            continue
        files += sorted((CourseRoot(root).feedback / name / chapter).glob("*.html"))
    return files, errors


def graded_students(root: Path, chapter: str) -> list[str]:
    """The students with an autograded submission of ``chapter`` under ``root`` (one shard's root alone)."""
    autograded = CourseRoot(root).autograded
    return (
        sorted(p.name for p in autograded.iterdir() if (p / chapter).is_dir()) if autograded.is_dir() else []
    )


class FeedbackError(RuntimeError):
    """Feedback cannot be rendered at all (nothing graded, or nbgrader unusable); one line says why."""


def feedback_for_chapters(
    root: Path, db_url: str, chapters: list[str], student: str | None = None
) -> tuple[list[Path], list[str]]:
    """:func:`generate_feedback` for each chapter that has autograded submissions; files and error lines."""
    graded = [c for c in chapters if CourseRoot(root).graded(c)]
    if not graded:
        raise FeedbackError(f"{CourseRoot(root).autograded}: nothing graded yet (run labs grade first)")
    files: list[Path] = []
    errors: list[str] = []
    for chapter in graded:
        try:
            done, failed = generate_feedback(root, db_url, chapter, student)
        except Exception as err:  # noqa: BLE001 - nbgrader or the gradebook unusable: one line
            raise FeedbackError(plain(str(err) or type(err).__name__, 300)) from None
        files, errors = files + done, errors + failed
    return files, errors


def feedback_for_class(
    root: Path, db_url: str, chapters: list[str], student: str | None = None
) -> tuple[list[Path], list[str]]:
    """:func:`feedback_for_chapters` for ``root`` and each of its shards' roots, every page gathered under
    ``root/feedback/<student>/<chapter>/``; FeedbackError when none of them has graded anything."""
    files: list[Path] = []
    errors: list[str] = []
    graded_somewhere = False
    for shard in (s.path for s in CourseRoot(root).shards()):
        try:
            done, failed = feedback_for_chapters(shard, db_url, chapters, student)
        except FeedbackError:
            continue
        graded_somewhere = True
        errors += failed
        files += done if shard == root else [_gathered(shard, root, page) for page in done]
    if not graded_somewhere:
        raise FeedbackError(
            f"{CourseRoot(root).autograded}: nothing of {', '.join(chapters)} graded yet (run labs grade first)"
        )
    if student is not None and not files and not errors:
        raise FeedbackError(no_such_student(root, chapters, student))
    return files, errors


def no_such_student(root: Path, chapters: list[str], student: str) -> str:
    """Why ``--student`` found nothing: the students whose submissions of ``chapters`` were graded, to pick from."""
    graded = sorted(
        {
            name
            for shard in CourseRoot(root).shards()
            for c in chapters
            for name in graded_students(shard.path, c)
        }
    )
    shown = ", ".join(plain(name) for name in graded[:12]) + (
        f" and {len(graded) - 12} more" if len(graded) > 12 else ""
    )
    return f"{plain(student)}: no graded submission of {', '.join(chapters)} (graded: {shown})"


def _gathered(shard: Path, root: Path, page: Path) -> Path:
    """A shard's feedback page copied to the same place under ``root/feedback``."""
    target = CourseRoot(root).feedback / page.relative_to(CourseRoot(shard).feedback)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(page.read_bytes())
    return target
