"""`labs check-lab`: a self-learner grades their lab in the sandbox and sees what a graded student sees."""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from graders.coursedir import HIDDEN_BLOCK, nbgrader_meta, without_solutions
from tests.conftest import BIN, FIXTURES, ROOT, labs_env
from tests.inprocess import labs_here

try:
    import tomllib
except ImportError:  # Python 3.10: JupyterLab brings tomli, the same parser
    import tomli as tomllib

pytestmark = [pytest.mark.slow, pytest.mark.grading]

COURSE = FIXTURES / "course"
SOURCE = COURSE / "fx_basic" / "lab_basic.ipynb"
PROBES = COURSE / "fx_basic" / "probes" / "lab_basic.py"


def _student_copy(folder: Path, solved: bool) -> Path:
    """The lab in the student's layout (``<chapter>/<lab>.ipynb``), solved or as released."""
    nb = nbformat.read(SOURCE, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and nbgrader_meta(cell).get("solution") and not solved:
            cell.source = without_solutions(cell.source)
        if cell.cell_type == "code" and nbgrader_meta(cell).get("grade"):
            cell.source = HIDDEN_BLOCK.sub("", cell.source)  # the release has no hidden tests
    path = folder / "student" / "fx_basic" / "lab_basic.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _check_lab(tmp_path: Path, notebook: Path, **env: str) -> subprocess.CompletedProcess:
    """`labs check-lab` in a process of its own: ``env`` reaches its interpreter's start (sitecustomize)."""
    return subprocess.run(
        [str(BIN / "labs"), "check-lab", str(notebook), "--course", str(COURSE)],
        cwd=tmp_path,
        env=labs_env() | env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_blank_lab_shows_the_feedback_text_and_no_hidden_code(tmp_path: Path):
    notebook = _student_copy(tmp_path, solved=False)
    result = labs_here("check-lab", str(notebook), "--course", str(COURSE), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    out = " ".join(result.stdout.split())  # the table wraps long lines
    assert "0/5 points (graded)" in out
    assert "hidden check 'relu_grad on random inputs' failed" in out
    hidden = [
        line.strip()
        for block in HIDDEN_BLOCK.findall(
            "\n".join(c.source for c in nbformat.read(SOURCE, as_version=4).cells)
        )
        for line in block.splitlines()
    ]
    probe_code = [
        line.strip() for line in PROBES.read_text().splitlines() if line.strip().startswith(("return", "x ="))
    ]
    shown = [
        line for line in hidden + probe_code if len(line) > 12 and "###" not in line and line in result.stdout
    ]
    assert probe_code and hidden and shown == []


def test_a_notebook_that_is_no_lab_is_one_line(tmp_path: Path):
    other = tmp_path / "notes" / "lab_basic.ipynb"
    other.parent.mkdir()
    other.write_text(SOURCE.read_text())
    result = labs_here("check-lab", str(other), "--course", str(COURSE), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {other}: not a lab of {COURSE} (a lab is "
        "<chapter>/lab_*.ipynb, in a folder named after its chapter, "
        "such as student/03_modules/lab_modules.ipynb)"
    ]
    assert labs_here("check-lab", str(tmp_path / "missing.ipynb")).stderr.strip() == (
        f"error: {tmp_path / 'missing.ipynb'}: no such notebook"
    )


def _student_set() -> set[str]:
    """The distributions `pip install -e .` installs (no extras): pyproject's dependencies and theirs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [(Requirement(r), "") for r in project["dependencies"]]
    found, seen = {canonicalize_name(project["name"])}, set()
    while wanted:
        req, extra = wanted.pop()
        name = canonicalize_name(req.name)
        if (name, tuple(sorted(req.extras))) in seen or (
            req.marker and not req.marker.evaluate({"extra": extra})
        ):
            continue
        seen.add((name, tuple(sorted(req.extras))))
        found.add(name)
        wanted += [(Requirement(r), e) for r in (metadata.requires(name) or []) for e in {"", *req.extras}]
    return found


BLOCKER = """
import importlib.machinery, sys
BLOCKED = frozenset({blocked!r})
class StudentsSetOnly:
    # as if the blocked distributions were not installed: the path finder does not see them
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)
    @staticmethod
    def invalidate_caches():
        importlib.machinery.PathFinder.invalidate_caches()
    @staticmethod
    def find_distributions(*args, **kwargs):
        return importlib.machinery.PathFinder.find_distributions(*args, **kwargs)
sys.meta_path[:] = [StudentsSetOnly if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""


def _vendored(dist: str) -> bool:
    """A distribution another package ships inside itself (setuptools' ``_vendor``, on sys.path once setuptools
    is imported): part of that package, not one of its own."""
    try:
        return "_vendor" in Path(str(metadata.distribution(dist).locate_file(""))).parts
    except metadata.PackageNotFoundError:
        return False


def test_a_solved_lab_earns_every_point_with_only_the_students_set(tmp_path: Path):
    """`make lab`'s venv has the package without extras: every module of another distribution is refused to
    the command (the sandbox imports from its own PYTHONPATH, so its side is what pyproject's list says).
    Nothing is left behind: the private grading root, with its results.json, is gone."""
    allowed = _student_set()
    blocked = sorted(
        module
        for module, dists in metadata.packages_distributions().items()
        if not any(canonicalize_name(d) in allowed or _vendored(d) for d in dists) and module.isidentifier()
    )
    assert {"papermill", "pytest", "playwright", "mkdocs"} <= set(blocked) and "hypothesis" not in blocked
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(BLOCKER.format(blocked=blocked))
    env = {"PYTHONPATH": str(tmp_path / "site")}
    refused = subprocess.run(
        [sys.executable, "-c", "import papermill"], env=labs_env() | env, capture_output=True, text=True
    )
    assert "No module named 'papermill'" in refused.stderr
    result = _check_lab(tmp_path, _student_copy(tmp_path, solved=True), **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5/5 points (graded)" in result.stdout
    assert list((tmp_path / "build").iterdir()) == []
