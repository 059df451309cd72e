"""Where things are by default, relative to the checkout, known here once; and the venv's tools on PATH.

Standard library only, so that commands that grade nothing (``labs run``, ``labs lint``) can import it
without loading nbgrader. Every command and pipeline takes these as its defaults; an option overrides each.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

COURSE = Path("course")  # the chapters: lessons, labs and their probes (nbgrader's source)
WRONG_SOLUTIONS = Path("tests/wrong_solutions")  # <chapter>/<grade_id>__*.py, each must lose points
RIGHT_SOLUTIONS = Path("tests/right_solutions")  # <chapter>/<grade_id>__*.py, each must earn them all
STUDENT_WORKSPACE = Path("student")  # the student's own copies of the released notebooks
BUILD = Path("build")  # everything generated: git ignores it, `make clean` removes it
GRADING_ROOT = BUILD / "grading"  # the course's nbgrader root: release, gradebook, submissions, feedback
CHECK_BUILD = BUILD / "check"  # labs check's scratch nbgrader courses
REPORT_DIR = BUILD / "report"  # labs run's executed notebooks, report.json, junit.xml, the static site
KERNEL_CACHE = BUILD / "cache"  # caches of the notebook kernels labs run starts (inductor, matplotlib)
HUB_ROOT = BUILD / "hub"  # labs hub's configuration, users' homes and exchange
EXCHANGE = HUB_ROOT / "exchange"  # nbgrader's exchange of labs hub


def ensure_tools_on_path() -> None:
    """Put this interpreter's bin folder on PATH, so that tools started by name (nbgrader's bare ``alembic``)
    are this venv's."""
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
