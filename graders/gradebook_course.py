"""An nbgrader course folder built on demand: config, API, and reading scores from the gradebook."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from traitlets.config import Config

COURSE_SOURCE = Path("course")
COURSE_ID = "pytorch-labs"  # PostgreSQL enforces the gradebook's course foreign key; SQLite did not


def ensure_tools_on_path() -> None:
    """nbgrader runs a bare ``alembic`` subprocess: put this interpreter's bin folder on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def nbgrader_config(root: Path, db_url: str | None = None, cell_timeout: int = 300) -> Config:
    """nbgrader configuration for a course rooted at ``root`` (``source/`` holds the chapters)."""
    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.course_id = COURSE_ID
    config.CourseDirectory.db_url = db_url or f"sqlite:///{root / 'gradebook.db'}"
    config.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".*"]
    config.ExecutePreprocessor.timeout = cell_timeout
    config.Execute.timeout = cell_timeout
    config.Exchange.root = str(root / "exchange")
    return config


def api(root: Path, db_url: str | None = None) -> NbGraderAPI:
    """The nbgrader API over ``root``, with the environment nbgrader needs."""
    ensure_tools_on_path()
    root.mkdir(parents=True, exist_ok=True)
    return NbGraderAPI(config=nbgrader_config(root, db_url))


def stage_source(root: Path, chapter: str, notebooks: list[Path]) -> Path:
    """Copy ``notebooks`` of ``chapter`` into ``root/source/chapter`` (fresh) and return that folder."""
    target = root / "source" / chapter
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for notebook in notebooks:
        shutil.copy2(notebook, target / notebook.name)
    return target


def require_success(result: dict, what: str) -> None:
    """Raise with nbgrader's own log when one of its steps failed."""
    if not result.get("success"):
        text = "\n".join(filter(None, [result.get("log"), result.get("error")]))
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        reasons = [line for line in lines if "ERROR" in line or "Error" in line]
        reason = next((r for r in reasons if "see above traceback" not in r), lines[-1] if lines else "no detail")
        raise RuntimeError(f"nbgrader {what} failed: {reason}")


def open_gradebook(db_url: str) -> Gradebook:
    """The gradebook at ``db_url``, for this course (use as a context manager)."""
    return Gradebook(db_url, course_id=COURSE_ID)
