"""What grading produces, one record per submitted notebook: the points of each test cell and why.

Plain data with no torch in it, so the commands that only read or write grades (``labs export``,
``labs feedback``) start without importing what grading needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CellGrade:
    """Points of one graded test cell and, when short, why (never hidden inputs or code)."""

    grade_id: str
    points: float
    score: float
    why: str = ""
    detail: str = (
        ""  # for the instructor only (labs check, results.json): the first differing case and values
    )
    visible_ok: bool | None = None  # whether the cell's visible tests passed (None: the cell never ran)


class ScoredCells:
    """Totals over ``self.cells`` (a list of :class:`CellGrade`)."""

    cells: list[CellGrade]

    @property
    def score(self) -> float:
        return sum(c.score for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.cells)


@dataclass
class NotebookGrade(ScoredCells):
    """The grade of one submitted notebook."""

    student: str
    chapter: str
    notebook: str
    status: str
    error: str = ""
    cells: list[CellGrade] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    flags: list[str] = field(default_factory=list)  # tampering and other things an instructor should look at


@dataclass
class Batch:
    """Everything one `labs grade` run produced."""

    grades: list[NotebookGrade]
    isolation: list[str]
    salts: dict[str, int]  # each chapter's salt (graders.grader.salts)
