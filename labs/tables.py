"""How `labs check` and `labs grade` results look in the terminal: a table, then one line per problem."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from labs.console import console, err_console, printable

if TYPE_CHECKING:  # annotations only: these modules import nbgrader and torch
    from graders.check.selfcheck import ChapterCheck
    from graders.pipeline import GradeRun


def print_chapter_check(result: ChapterCheck) -> None:
    """The chapter's verdicts as a table, then each failure, warning and shortfall in full, one line each."""
    if result.error:
        console.print(f"[red]FAIL[/] {escape(result.error)}", soft_wrap=True)
        return
    table = Table(title=f"labs check {result.chapter}")
    for column in ("lab", "version", "expected", "points", "per cell", "verdict"):
        table.add_column(column, overflow="fold")
    for v in result.verdicts:
        per_cell = ", ".join(f"{c.grade_id} {c.score:g}/{c.points:g}" for c in v.cells)
        table.add_row(
            v.lab,
            v.version,
            v.expectation,
            f"{v.score:g}/{v.max_score:g}",
            per_cell,
            "[green]ok[/]" if v.ok else "[red]FAIL[/] (below)",
        )
    console.print(table)
    for v in result.verdicts:
        if not v.ok:
            console.print(
                f"[red]FAIL[/] {escape(v.lab)} {escape(v.version)}: {escape(v.note)}", soft_wrap=True
            )
        for line in v.warnings:  # the lab passes, but this is worth a look
            console.print(f"[yellow]warning[/] {escape(v.lab)}: {escape(line)}", soft_wrap=True)
    for line in result.shortfalls:  # below the course standard, or a solution file nothing uses
        console.print(f"[red]FAIL[/] {escape(line)}", soft_wrap=True)


def print_grade_run(run: GradeRun) -> None:
    """The grades as a table, then refused files and grader problems, one line each, then the totals."""
    table = Table(title="labs grade")
    for column in ("student", "notebook", "status", "points", "notes"):
        table.add_column(column, overflow="fold")
    for g in run.batch.grades:
        notes = "; ".join(filter(None, [g.error, *g.flags]))
        table.add_row(
            g.student, f"{g.chapter}/{g.notebook}", g.status, f"{g.score:g}/{g.max_score:g}", printable(notes)
        )
    console.print(table)
    for line in run.rejected:
        err_console.print(printable(f"error: {line}"), soft_wrap=True)
    for line in run.problems:
        err_console.print(printable(line), soft_wrap=True)
    console.print("isolation: " + "; ".join(run.batch.isolation), soft_wrap=True)
    graded = sum(g.status == "graded" for g in run.batch.grades)
    console.print(
        f"{graded}/{len(run.batch.grades)} notebooks graded, {len(run.rejected)} files refused; "
        f"report: {run.report_dir / 'summary.html'}"
    )
