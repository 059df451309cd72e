"""What a grading run leaves for the instructor: results.json, a CSV and Gradescope export from the
gradebook, and an HTML summary (score distribution per exercise, submissions that went wrong).

A grade's text names files for the instructor (``bad file: /abs/path/...``); whatever a student sees
(Gradescope's results.json, the CSV, feedback) is written from :func:`student_view` instead, which
cuts every absolute path to its last name.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import os
import re
import time
from dataclasses import asdict, replace
from pathlib import Path

from graders.grader.results import Batch, CellGrade, NotebookGrade
from graders.grader.submissions import SAFE_NAME, plain
from graders.nbgrader.course_root import CourseRoot
from graders.nbgrader.nbgrader_course import open_gradebook

# An absolute path: a "/" (or "~/") that no name or number runs into, through its last name. A folder's
# name may hold spaces inside it; the last name ends at a space, a colon, a quote or a bracket.
MANUAL = "score set by the instructor; the automatic checks: "  # before a cell's reason when scored by hand
HOST_PATH = re.compile(r"(?<![\w.~-])~?/(?:[^\s/:](?:[^/\n:]*[^\s/:])?/)*([^\s/:'\"(),;\[\]]+)")


def for_student(text: str) -> str:
    """``text`` of a grade as a student may see it: every absolute path (the submissions folder, the
    grader's files, a temporary folder) cut to its last name (``bad file: lab.ipynb: ...``)."""
    return HOST_PATH.sub(lambda found: found.group(1), text)


def student_view(grade: NotebookGrade) -> NotebookGrade:
    """A copy of ``grade`` with only what a student may see: its error and every cell's why through
    :func:`for_student`, and none of the instructor's detail."""
    cells = [replace(c, why=for_student(c.why), detail="") for c in grade.cells]
    return replace(grade, error=for_student(grade.error), cells=cells, flags=[])


def write_results(batch: Batch, path: Path) -> None:
    """This run's log: every grade of the run, per cell with the reason for lost points, as JSON (the scores
    the run recorded; the gradebook holds the current ones, manual scores included)."""
    from graders.grader.salts import fingerprint

    data = {
        "isolation": batch.isolation,
        "salts": {c: fingerprint(s) for c, s in sorted(batch.salts.items())},
        "grades": [asdict(g) | {"score": g.score, "max_score": g.max_score} for g in batch.grades],
    }
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def run_log_path(root: Path) -> Path:
    """Where this run's log goes under the grading root: ``runs/<UTC time>-<pid>.json``, kept per run."""
    now = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 10**9)) + f".{now % 10**9:09d}Z"
    return CourseRoot(root).runs / f"{stamp}-{os.getpid()}.json"


def run_logs(root: Path) -> list[Path]:
    """Every run log under the grading root ``root``, its shards' roots included (``root/shard-i/runs``: a
    class graded on Slurm), oldest first."""
    runs = CourseRoot(root).runs.name
    return sorted(root.glob(f"**/{runs}/*.json"), key=lambda p: p.name) if root.is_dir() else []


def logged_grades(root: Path) -> dict[tuple[str, str, str], NotebookGrade]:
    """The latest logged grade of each (student, chapter, notebook) over every run log under ``root`` (a log
    that cannot be read is skipped: the gradebook, not the logs, holds the scores)."""
    latest: dict[tuple[str, str, str], NotebookGrade] = {}
    for log in run_logs(root):
        try:
            raws = json.loads(log.read_text(encoding="utf-8"))["grades"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for raw in raws:
            try:
                grade = _grade_from(raw)
            except (TypeError, KeyError, AttributeError):
                continue
            latest[(grade.student, grade.chapter, grade.notebook)] = grade
    return latest


def _grade_from(raw: dict) -> NotebookGrade:
    grade = NotebookGrade(**{k: v for k, v in raw.items() if k not in ("score", "max_score", "cells")})
    grade.cells = [CellGrade(**c) for c in raw["cells"]]
    return grade


def gradebook_cells(
    db_url: str, chapters: list[str] | None = None
) -> dict[tuple[str, str, str], dict[str, tuple[float, float, bool]]]:
    """Each (student, chapter, notebook)'s graded cells (of ``chapters``; None: all): grade_id -> (score, max score,
    set by hand), the score as nbgrader counts it (a manual score wins over the automatic one)."""
    found = {}
    with open_gradebook(db_url) as gradebook:
        for assignment in gradebook.assignments:
            if chapters is not None and assignment.name not in chapters:
                continue
            for submission in assignment.submissions:
                for notebook in submission.notebooks:
                    found[(submission.student.id, assignment.name, notebook.name)] = {
                        g.name: (float(g.score), float(g.max_score), g.manual_score is not None)
                        for g in notebook.grades
                        if g.max_score > 0
                    }
    return found


def gradebook_rows(db_url: str, chapters: list[str] | None = None) -> list[dict]:
    """One row per student and notebook (of ``chapters``; None: all): per-cell scores (manual score wins over
    auto), total."""
    rows = []
    with open_gradebook(db_url) as gradebook:
        for assignment in gradebook.assignments:
            if chapters is not None and assignment.name not in chapters:
                continue
            for submission in assignment.submissions:
                for notebook in submission.notebooks:
                    row = {
                        "student": submission.student.id,
                        "chapter": assignment.name,
                        "notebook": notebook.name,
                    }
                    cells = {g.name: float(g.score) for g in notebook.grades if g.max_score > 0}
                    row |= cells | {"score": sum(cells.values()), "max_score": float(notebook.max_score)}
                    rows.append(row)
    return rows


def gradebook_chapters(db_url: str) -> list[str]:
    """The chapters the gradebook knows (released or graded labs), graded or not."""
    with open_gradebook(db_url) as gradebook:
        return sorted(assignment.name for assignment in gradebook.assignments)


def export_csv(db_url: str, out: Path, chapters: list[str] | None = None) -> int:
    """Write the gradebook (``chapters`` of it; None: all) as CSV; returns the number of rows (none: nothing is
    written)."""
    rows = [
        {k: for_student(v) if isinstance(v, str) else v for k, v in row.items()}
        for row in gradebook_rows(db_url, chapters)
    ]
    if not rows:
        return 0
    columns = ["student", "chapter", "notebook"]
    columns += sorted({k for r in rows for k in r} - {*columns, "score", "max_score"}) + [
        "score",
        "max_score",
    ]
    with out.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def gradescope_results(grade: NotebookGrade) -> dict:
    """Gradescope's autograder ``results.json`` for one notebook (outputs shown as plain text)."""
    grade = student_view(grade)
    tests = [
        {
            "name": c.grade_id,
            "score": c.score,
            "max_score": c.points,
            "output": c.why or "passed",
            "visibility": "visible",
        }
        for c in grade.cells
    ]
    result = {"score": grade.score, "tests": tests, "output_format": "text", "test_output_format": "text"}
    if grade.error:
        result["output"] = grade.error
    return result


def from_gradebook(
    key: tuple[str, str, str], cells: dict[str, tuple[float, float, bool]], logged: NotebookGrade | None
) -> NotebookGrade:
    """A notebook's grade with the gradebook's scores and the latest run log's reasons: a cell scored by
    hand says so instead of the automatic reason."""
    student, chapter, notebook = key
    why = {c.grade_id: c.why for c in logged.cells} if logged else {}
    grade = NotebookGrade(
        student, chapter, notebook, logged.status if logged else "graded", logged.error if logged else ""
    )
    grade.cells = [
        CellGrade(
            grade_id,
            points,
            score,
            MANUAL + (why.get(grade_id) or "every check passed") if manual else why.get(grade_id, ""),
        )
        for grade_id, (score, points, manual) in cells.items()
    ]
    return grade


def export_gradescope(
    db_url: str, root: Path, out: Path, chapters: list[str] | None = None
) -> tuple[int, list[str]]:
    """One ``<student>/<chapter>/results.json`` per notebook in the gradebook (of ``chapters``; None: all) with its
    scores, manual ones included, and the reasons from the run logs under ``root``; returns how many were written
    and a ``grader error: ...`` line per notebook that could not be (the others are still written)."""
    logged = logged_grades(root)
    count, errors = 0, []
    for key, cells in sorted(gradebook_cells(db_url, chapters).items()):
        try:
            write_gradescope(from_gradebook(key, cells, logged.get(key)), out)
            count += 1
        except Exception as err:  # noqa: BLE001 - one notebook's export failing leaves the others
            who = "/".join(plain(str(k), 60) for k in key)
            errors.append(
                f"grader error: Gradescope export of {who} failed ({plain(f'{type(err).__name__}: {err}')})"
            )
    return count, errors


def write_gradescope(grade: NotebookGrade, out: Path) -> Path:
    """Write one grade as Gradescope's results.json; refuses names unfit for a path."""
    if not (SAFE_NAME.match(grade.student) and SAFE_NAME.match(grade.chapter)):
        raise ValueError("student or chapter name unfit for a folder name")
    folder = out / grade.student / grade.chapter
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(gradescope_results(grade), indent=1), encoding="utf-8")
    return folder / "results.json"


def _distribution_png(grades: list[NotebookGrade]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ids = list(dict.fromkeys(c.grade_id for g in grades for c in g.cells))
    full = [sum(1 for g in grades for c in g.cells if c.grade_id == i and c.score >= c.points) for i in ids]
    zero = [sum(1 for g in grades for c in g.cells if c.grade_id == i and c.score == 0) for i in ids]
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(ids)), 3))
    ax.bar(ids, full, label="full points")
    ax.bar(ids, zero, bottom=full, label="zero")
    ax.set_ylabel("submissions")
    ax.tick_params(axis="x", rotation=30)
    ax.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def write_summary(batch: Batch, path: Path) -> None:
    """An HTML page: isolation, per-chapter score distribution per exercise, problem submissions."""
    parts = [
        "<!doctype html><meta charset='utf-8'><title>labs grade summary</title><h1>Grading summary</h1>",
        "<p>Isolation: " + html.escape("; ".join(batch.isolation) or "unknown") + "</p>",
    ]
    for chapter in sorted({g.chapter for g in batch.grades}):
        grades = [g for g in batch.grades if g.chapter == chapter and g.cells]
        parts.append(f"<h2>{html.escape(chapter)}</h2>")
        if grades:
            scores = sorted(g.score for g in grades)
            parts.append(
                f"<p>{len(grades)} notebooks, median {scores[len(scores) // 2]:g}/{grades[0].max_score:g}</p>"
            )
            parts.append(
                f"<img alt='score distribution per exercise' src='data:image/png;base64,{_distribution_png(grades)}'>"
            )
    problems = [g for g in batch.grades if g.status != "graded" or g.flags]
    parts.append(
        f"<h2>Submissions to look at ({len(problems)})</h2><table><tr><th>student</th><th>notebook</th>"
        "<th>status</th><th>why</th></tr>"
    )
    for g in problems:
        why = "; ".join(filter(None, [g.error, *g.flags]))
        parts.append(
            f"<tr><td>{html.escape(g.student)}</td><td>{html.escape(g.chapter)}/{html.escape(g.notebook)}</td>"
            f"<td>{html.escape(g.status)}</td><td>{html.escape(why)}</td></tr>"
        )
    parts.append("</table>")
    path.write_text("\n".join(parts), encoding="utf-8")
