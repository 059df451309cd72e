"""The course's nbgrader root, as nbgrader's ``CourseDirectory`` knows it: one per course.

`labs release` generates the student notebooks in it and records the labs in its gradebook; `labs collect`,
`labs grade`, `labs feedback` and `labs export` work in it. The one place that knows its layout, the gradebook's
URL, and nbgrader's configuration of the course, rendered from one set of values both as the ``traitlets``
object `labs` passes to nbgrader's API and as the ``nbgrader_config.py`` text nbgrader's own tools (formgrader,
``nbgrader db``) read. Standard library only: `labs hub` writes the instructor's config from it without
importing nbgrader.

Layout::

    ROOT/gradebook.db                               SQLite gradebook (unless a --db URL names another)
    ROOT/nbgrader_config.py                         for nbgrader's own tools
    ROOT/source/<chapter>/                          the chapter as nbgrader generates student versions from it
    ROOT/release/<chapter>/                         the student versions (`labs release`): lessons and labs
    ROOT/submitted/<student>/<chapter>/             what `labs collect` took from the exchange
    ROOT/autograded/<student>/<chapter>/<lab>.ipynb  each graded notebook, feedback rendered from it
    ROOT/feedback/<student>/<chapter>/<lab>.html     nbgrader's feedback pages
    ROOT/reports/                                   results.json, CSV, Gradescope export, summary
    ROOT/runs/<time>-<pid>.json                     each `labs grade` run's log
    ROOT/salts/                                     the class's salts (graders.grader.salts)
    ROOT/logs/                                      each grading sandbox's log
    ROOT/grades.csv, ROOT/gradescope/               `labs export`'s (unless --out names another place)
    ROOT/student-jupyter-config/                    `labs lab`'s Jupyter config (the student's page config)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

COURSE_ID = "pytorch-labs"  # PostgreSQL enforces the gradebook's course foreign key; SQLite did not
IGNORED = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".*"]
# Collect (`labs collect`, formgrader's Collect button) follows no link and takes each submission from its own
# student only: nbgrader's collect with graders.nbgrader.exchange's search and copy.
OWNED_COLLECT = "graders.nbgrader.exchange.OwnedCollect"
COURSE_SETTINGS = (
    "from graders.nbgrader.nbgrader_course import add_course_settings  # noqa: E402\n"
    "add_course_settings(c)  # feedback sanitised as `labs feedback` sanitises it\n"
)


@dataclass(frozen=True)
class CourseRoot:
    """A grading root (``path``) and its gradebook (``db``: a URL; None: SQLite in the root)."""

    path: Path
    db: str | None = None

    @property
    def gradebook_file(self) -> Path:
        return self.path / "gradebook.db"

    @property
    def db_url(self) -> str:
        return self.db or f"sqlite:///{self.gradebook_file.resolve()}"

    @property
    def has_gradebook(self) -> bool:
        """Whether this root has a gradebook (always true for a --db URL)."""
        return self.db is not None or self.gradebook_file.is_file()

    @property
    def config_file(self) -> Path:
        return self.path / "nbgrader_config.py"

    @property
    def autograded(self) -> Path:
        return self.path / "autograded"

    @property
    def feedback(self) -> Path:
        return self.path / "feedback"

    @property
    def reports(self) -> Path:
        return self.path / "reports"

    @property
    def release(self) -> Path:
        return self.path / "release"

    @property
    def salts(self) -> Path:
        """The class's salts (``labs grade --salts`` names another folder)."""
        return self.path / "salts"

    @property
    def csv_export(self) -> Path:
        """`labs export --format csv`'s file, unless --out names another."""
        return self.path / "grades.csv"

    @property
    def gradescope_export(self) -> Path:
        """`labs export --format gradescope`'s folder, unless --out names another."""
        return self.path / "gradescope"

    @property
    def sandbox_logs(self) -> Path:
        """Each grading sandbox's log (why one did not start)."""
        return self.path / "logs"

    @property
    def runs(self) -> Path:
        """One log per `labs grade` run."""
        return self.path / "runs"

    @property
    def student_jupyter_config(self) -> Path:
        return self.path / "student-jupyter-config"

    @property
    def source(self) -> Path:
        return self.path / "source"

    @property
    def submitted(self) -> Path:
        return self.path / "submitted"

    def autograded_notebook(self, student: str, chapter: str, notebook: str) -> Path:
        return self.autograded / student / chapter / f"{notebook}.ipynb"

    def graded(self, chapter: str) -> bool:
        """Whether any submission of ``chapter`` was autograded here."""
        return self.autograded.is_dir() and any(self.autograded.glob(f"*/{chapter}"))

    def shards(self) -> list[CourseRoot]:
        """This root and its shards' roots: subfolders holding autograded notebooks (a class graded in shards,
        ``labs grade --shard i/N --root ROOT/shard-i``, each into the one shared gradebook)."""
        found = (
            sorted(p for p in self.path.iterdir() if p.is_dir() and CourseRoot(p).autograded.is_dir())
            if self.path.is_dir()
            else []
        )
        return [self, *(CourseRoot(p, self.db_url) for p in found)]

    def config_values(self, exchange: Path | None = None) -> dict[str, dict[str, Any]]:
        """nbgrader's configuration of the course, ``{section: {trait: value}}``: the root, course id and
        gradebook, how the exchange is collected from and, when given, where it is (``exchange``: otherwise the
        user's own nbgrader config says, as `labs hub` writes it for the instructor)."""
        values: dict[str, dict[str, Any]] = {
            "CourseDirectory": {
                "root": str(self.path),
                "course_id": COURSE_ID,
                "db_url": self.db_url,
                "ignore": list(IGNORED),
            },
            "ExchangeFactory": {"collect": OWNED_COLLECT},
        }
        return values | ({"Exchange": {"root": str(exchange)}} if exchange else {})

    def write_config(self) -> Path:
        """The root's ``nbgrader_config.py``, for nbgrader's own tools (formgrader, ``nbgrader db``) run there."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(self.config_text(), encoding="utf-8")
        return self.config_file

    def config_text(self, exchange: Path | None = None, header: str = "written by labs") -> str:
        """:meth:`config_values` as an ``nbgrader_config.py``, with the settings that are not plain values (the
        feedback's sanitizer) from the function `labs` calls on its own configuration object."""
        return config_text(self.config_values(exchange), header) + COURSE_SETTINGS


def student_config_values(exchange: Path, student_id: str | None = None) -> dict[str, dict[str, Any]]:
    """A student's nbgrader configuration: the course and its exchange (``student_id``: when one unix user stands
    for every student, which student this is)."""
    course: dict[str, Any] = {"course_id": COURSE_ID} | ({"student_id": student_id} if student_id else {})
    return {"CourseDirectory": course, "Exchange": {"root": str(exchange)}}


def config_text(values: dict[str, dict[str, Any]], header: str = "written by labs") -> str:
    """nbgrader configuration values as an ``nbgrader_config.py``."""
    lines = [f"c = get_config()  # noqa  ({header})"]
    for section, traits in values.items():
        lines += [f"c.{section}.{trait} = {value!r}" for trait, value in traits.items()]
    return "\n".join(lines) + "\n"
