"""An nbgrader course folder built on demand: config, API, and reading scores from the gradebook.

Feedback is rendered with nbconvert's SanitizeHTML after nbgrader's GetGrades, allowing only the
plain markup that rendered markdown needs: no scripts, event handlers, styles or ``javascript:`` links.
"""

from __future__ import annotations

import re
import shutil
from functools import cache
from pathlib import Path

import nbgrader.api
from alembic.script import ScriptDirectory
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbconvert.preprocessors.sanitize import SanitizeHTML
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.dbutil import ALEMBIC_DIR
from nbgrader.preprocessors import GetGrades
from traitlets.config import Config

from graders.boundary.protocol import Limits
from graders.nbgrader.course_root import COURSE_ID, CourseRoot
from graders.paths import ensure_tools_on_path

SAFE_TAGS = [
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "code",
    "dd",
    "del",
    "div",
    "dl",
    "dt",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "kbd",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "span",
    "strong",
    "sub",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
]
SAFE_ATTRIBUTES = {
    "a": ["href"],
    "img": ["src", "alt"],
    "div": ["class"],
    "pre": ["class"],
    "span": ["class"],
    "code": ["class"],
}
SAFE_SCHEMES = {"http", "https", "mailto"}
URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


@cache
def gradebook_schema_head() -> str:
    """The newest revision of nbgrader's gradebook schema, which a new gradebook is stamped with.

    Read here from nbgrader's own migration scripts; nbgrader's ``get_alembic_version`` starts an
    ``alembic heads`` process for it (1.6 s of CPU) on every new gradebook, so this replaces it; the scripts
    are read once per process.
    """
    head = ScriptDirectory(ALEMBIC_DIR).get_current_head()
    if head is None:
        raise RuntimeError(f"{ALEMBIC_DIR}: nbgrader's gradebook migrations have no head revision")
    return head


def stamp_gradebooks_in_process() -> None:
    """New gradebooks get :func:`gradebook_schema_head`, not a subprocess's answer: called wherever a
    gradebook may be set up (:func:`nbgrader_config`, :func:`open_gradebook`), not on import."""
    nbgrader.api.get_alembic_version = gradebook_schema_head


def nbgrader_config(
    root: Path, db_url: str | None = None, record: bool = True, exchange: Path | None = None
) -> Config:
    """nbgrader configuration for a course rooted at ``root``: the course's (:meth:`CourseRoot.config_values`, with
    the ``exchange``, and :func:`add_course_settings`, as its ``nbgrader_config.py`` has them too) and, for this
    run, ``record``: generate_assignment records what it generates in the gradebook (lessons are generated
    without)."""
    stamp_gradebooks_in_process()
    config = Config(CourseRoot(root, db_url).config_values(exchange))
    add_course_settings(config)
    config.GenerateAssignment.no_database = not record
    config.SaveCells.enabled = record
    return config


def add_course_settings(config: Config) -> None:
    """What the course's configuration holds beyond plain values (which ``nbgrader_config.py`` cannot spell, so
    the text imports and calls this): feedback sanitised (formgrader's feedback too) and a cell's timeout."""
    timeout = int(Limits().wall_seconds)
    config.ExecutePreprocessor.timeout = timeout
    config.Execute.timeout = timeout
    config.GenerateFeedback.preprocessors = [GetGrades, SanitizeHTML, CSSHTMLHeaderPreprocessor]
    config.SanitizeHTML.update(sanitizer_settings())
    config.SanitizeHTML.enabled = True  # nbconvert preprocessors are off unless enabled


def sanitizer_settings() -> dict:
    """nbconvert SanitizeHTML settings for student content: allowed markup kept, the rest removed."""
    return {"tags": list(SAFE_TAGS), "attributes": allowed_attribute, "strip": True}


def allowed_attribute(tag: str, name: str, value: str) -> bool:
    """bleach's attribute filter: the attributes of SAFE_ATTRIBUTES, URLs only with a safe scheme
    (or none), judged as a browser reads them: entities decoded, control characters and spaces dropped."""
    if name not in SAFE_ATTRIBUTES.get(tag, ()):
        return False
    scheme = URL_SCHEME.match(re.sub(r"[\x00-\x20]", "", value)) if name in ("href", "src") else None
    return scheme is None or scheme.group(1).lower() in SAFE_SCHEMES


def sanitizer() -> SanitizeHTML:
    """The SanitizeHTML preprocessor that feedback uses, for cleaning a notebook before it is saved."""
    return SanitizeHTML(**sanitizer_settings())


def api(
    root: Path,
    db_url: str | None = None,
    record: bool = True,
    exchange: Path | None = None,
    settings: Config | None = None,
) -> NbGraderAPI:
    """The nbgrader API over ``root``, with the environment nbgrader needs (``record``, ``exchange``:
    :func:`nbgrader_config`; ``settings``: this run's own, over it)."""
    ensure_tools_on_path()
    root.mkdir(parents=True, exist_ok=True)
    config = nbgrader_config(root, db_url, record=record, exchange=exchange)
    config.merge(settings or Config())
    return NbGraderAPI(config=config)


def stage_source(root: Path, chapter: str, notebooks: list[Path], replacing: str = "*") -> Path:
    """Copy ``notebooks`` of ``chapter`` into ``root/source/chapter``, whose files matching ``replacing`` go first
    (``*``: a fresh folder), and return that folder."""
    target = CourseRoot(root).source / chapter
    if replacing == "*":
        shutil.rmtree(target, ignore_errors=True)
    for old in target.glob(replacing) if target.is_dir() else []:
        old.unlink()
    target.mkdir(parents=True, exist_ok=True)
    for notebook in notebooks:
        shutil.copy2(notebook, target / notebook.name)
    return target


def require_success(result: dict, what: str) -> None:
    """Raise with nbgrader's own log when one of its steps failed."""
    if not result.get("success"):
        text = "\n".join(filter(None, [result.get("log"), result.get("error")]))
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        reasons = [line for line in lines if "ERROR" in line or "Error" in line]
        reason = next(
            (r for r in reasons if "see above traceback" not in r), lines[-1] if lines else "no detail"
        )
        raise RuntimeError(f"nbgrader {what} failed: {reason}")


def open_gradebook(db_url: str) -> Gradebook:
    """The gradebook at ``db_url``, for this course (use as a context manager)."""
    stamp_gradebooks_in_process()
    return Gradebook(db_url, course_id=COURSE_ID)
