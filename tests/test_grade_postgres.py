"""Two graders (separate course folders, as on two machines) grade shards into one PostgreSQL gradebook.

Needs a real server: LABS_TEST_POSTGRES_URL (default postgresql://labs:labs@127.0.0.1:5432/postgres,
what ci/postgres.sh starts). Skips, saying so, when none answers, unless the run has --require=postgres
(.ci/run sets it), where that is a failure.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import nbformat
import pytest

from tests.conftest import FIXTURES
from tests.inprocess import labs_here
from tests.requires import POSTGRES_URL, unavailable

pytestmark = pytest.mark.grading

LAB = FIXTURES / "course" / "fx_basic" / "lab_basic.ipynb"
SERVER = POSTGRES_URL


@pytest.fixture
def database() -> str:
    """A fresh database on the server, dropped afterwards."""
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(SERVER, isolation_level="AUTOCOMMIT")
    name = f"labs_test_{secrets.token_hex(4)}"
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text(f"create database {name}"))
    except sqlalchemy.exc.OperationalError as err:
        unavailable(
            "postgres",
            f"no PostgreSQL server at {SERVER} (run ci/postgres.sh as root): {str(err).splitlines()[0]}",
        )
    yield SERVER.rsplit("/", 1)[0] + "/" + name
    with engine.connect() as conn:
        conn.execute(sqlalchemy.text(f"drop database {name} with (force)"))
    engine.dispose()


def _submissions(folder: Path) -> dict[str, float]:
    """Four students: two full, one blank, one wrong; returns their expected totals."""
    source = nbformat.read(LAB, as_version=4)
    blank = nbformat.read(LAB, as_version=4)
    for cell in blank.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "raise NotImplementedError()"
    wrong = nbformat.read(LAB, as_version=4)
    next(
        c for c in wrong.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "scale"
    ).source = "def scale(t, factor):\n    return t.mul_(factor)\n"
    for student, nb in {"ada": source, "ben": blank, "cy": wrong, "dee": source}.items():
        (folder / student / "fx_basic").mkdir(parents=True)
        nbformat.write(nb, folder / student / "fx_basic" / "lab_basic.ipynb")
    return {"ada": 5.0, "ben": 0.0, "cy": 3.0, "dee": 5.0}


def test_two_shards_into_one_postgres_gradebook(database: str, tmp_path: Path) -> None:
    from graders.nbgrader.nbgrader_course import open_gradebook

    expected = _submissions(tmp_path / "submitted")
    for shard in ("1/2", "2/2"):
        proc = labs_here(
            "grade",
            str(tmp_path / "submitted"),
            "--course",
            str(FIXTURES / "course"),
            "--chapter",
            "fx_basic",
            "--root",
            str(tmp_path / f"machine{shard[0]}"),
            "--db",
            database,
            "--shard",
            shard,
            "--jobs",
            "2",
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert "2/2 notebooks graded" in proc.stdout
    with open_gradebook(database) as gradebook:
        totals = {
            s.id: sum(
                g.score for g in gradebook.find_submission_notebook("lab_basic", "fx_basic", s.id).grades
            )
            for s in gradebook.students
        }
    assert totals == expected
    proc = labs_here("export", "--format", "csv", "--db", database, "--out", str(tmp_path / "grades.csv"))
    assert proc.returncode == 0, proc.stderr
    assert "4 rows written" in proc.stdout


def test_unreachable_gradebook_is_one_line_exit_2(tmp_path: Path) -> None:
    submitted = tmp_path / "submitted" / "ada" / "fx_basic"
    submitted.mkdir(parents=True)
    (submitted / LAB.name).write_bytes(LAB.read_bytes())
    proc = labs_here(
        "grade",
        str(tmp_path / "submitted"),
        "--course",
        str(FIXTURES / "course"),
        "--chapter",
        "fx_basic",
        "--root",
        str(tmp_path / "root"),
        "--db",
        "postgresql://nobody:x@127.0.0.1:1/none",
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.startswith("error: gradebook postgresql://")
        and len(proc.stderr.strip().splitlines()) == 1
    )
