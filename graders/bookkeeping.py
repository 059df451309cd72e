"""nbgrader's bookkeeping for sandboxed grades: the assignment in the gradebook, each submission's
scores, and an "autograded" notebook per submission from which nbgrader renders feedback.

The autograded notebook holds the student's cells, test cells as the student saw them (hidden
tests removed) and, under each test cell, what the grader found: never hidden code or inputs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
from nbgrader.api import MissingEntry

from graders import gradebook_course as course
from graders.grading import Lab, NotebookGrade
from graders.restore import nbgrader_meta, visible_part


def ensure_assignments(root: Path, db_url: str, labs: dict[tuple[str, str], Lab], lab_paths: dict[str, list[Path]]) -> None:
    """Put each chapter's labs into the gradebook (nbgrader generate_assignment) unless already there."""
    api = course.api(root, db_url)
    (root / "nbgrader_config.py").write_text(  # nbgrader's own tools (formgrader, nbgrader db) work here too
        f"c = get_config()  # noqa\nc.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.course_id = {course.COURSE_ID!r}\nc.CourseDirectory.db_url = {db_url!r}\n",
        encoding="utf-8")
    with course.open_gradebook(db_url) as gradebook:
        known = {a.name: {n.name for n in a.notebooks} for a in gradebook.assignments}
    for chapter, paths in lab_paths.items():
        if {p.stem for p in paths} <= known.get(chapter, set()):
            continue
        course.stage_source(root, chapter, paths)
        course.require_success(api.generate_assignment(chapter, force=True), f"generate_assignment {chapter}")


def record(db_url: str, grades: list[NotebookGrade]) -> None:
    """Write the notebooks' scores into the gradebook (students and submissions created as needed)."""
    with course.open_gradebook(db_url) as gradebook:
        for grade in grades:
            gradebook.update_or_create_student(grade.student)
            try:
                gradebook.find_submission(grade.chapter, grade.student)
            except MissingEntry:
                gradebook.add_submission(grade.chapter, grade.student)
            for cell in grade.cells:
                entry = gradebook.find_grade(cell.grade_id, grade.notebook, grade.chapter, grade.student)
                entry.auto_score = cell.score
            gradebook.db.commit()


def feedback_notebook(lab: Lab, grade: NotebookGrade, submitted: nbformat.NotebookNode | None) -> nbformat.NotebookNode:
    """The submission as nbgrader's feedback shows it: test cells restored, results under them."""
    nb = nbformat.from_dict(json.loads(json.dumps(submitted if submitted is not None else lab.source)))
    by_id = {c.grade_id: c for c in grade.cells}
    tests = {t.grade_id: t for t in lab.tests}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if submitted is None and meta.get("solution"):
            cell.source = "# (no gradable submission)"
        grade_id = meta.get("grade_id")
        if cell.cell_type == "code" and grade_id in tests:
            cell.source = visible_part(tests[grade_id].visible_source)
            cell.metadata["nbgrader"] = dict(nbgrader_meta(next(c for c in lab.source.cells
                                                                 if nbgrader_meta(c).get("grade_id") == grade_id)))
            result = by_id.get(grade_id)
            text = (f"{result.score:g}/{result.points:g} points" + (f": {result.why}" if result.why else "")
                    if result else "not graded")
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")]
    if grade.error:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**Grading problem:** {grade.error}"))
    return nb


def write_autograded(root: Path, lab: Lab, grade: NotebookGrade, submitted: nbformat.NotebookNode | None) -> Path:
    """Save the feedback notebook where nbgrader's generate_feedback looks for it."""
    folder = root / "autograded" / grade.student / grade.chapter
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{grade.notebook}.ipynb"
    nbformat.write(feedback_notebook(lab, grade, submitted), path)
    return path


def generate_feedback(root: Path, db_url: str, chapter: str, student: str | None = None) -> list[Path]:
    """nbgrader's feedback HTML for autograded submissions of ``chapter``; returns the files."""
    api = course.api(root, db_url)
    students = [student] if student else sorted(p.name for p in (root / "autograded").iterdir()
                                                   if (p / chapter).is_dir())
    files = []
    for name in students:
        course.require_success(api.generate_feedback(chapter, name, force=True), f"generate_feedback {name}")
        files += sorted((root / "feedback" / name / chapter).glob("*.html"))
    return files


def clear_submission(root: Path, student: str, chapter: str) -> None:
    """Remove a previous autograded copy (a regrade replaces it)."""
    shutil.rmtree(root / "autograded" / student / chapter, ignore_errors=True)
