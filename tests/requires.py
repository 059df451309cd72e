"""What this run must have: ``pytest --require=slurm,postgres,hub,cuda,sandbox,browser`` (.ci/run passes it in
``PYTEST_ADDOPTS``). A test that cannot run for want of one of these skips, saying why and how to get it,
unless the run requires it: then it fails, so that a missing piece never passes as a skip."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

KNOWN = frozenset({"browser", "cuda", "hub", "postgres", "sandbox", "slurm"})
REQUIRED: set[str] = set()
# The PostgreSQL server of the shared-gradebook tests: ci/postgres.sh prints its URL.
POSTGRES_URL = os.environ.get("LABS_TEST_POSTGRES_URL", "postgresql://labs:labs@127.0.0.1:5432/postgres")


def require(names: str) -> None:
    """Read ``--require``'s comma-separated value (tests/conftest.py); an unknown name is a usage error."""
    asked = {name.strip() for name in names.split(",") if name.strip()}
    unknown = sorted(asked - KNOWN)
    if unknown:
        raise pytest.UsageError(
            f"--require: unknown {', '.join(unknown)} (known: {', '.join(sorted(KNOWN))})"
        )
    REQUIRED.clear()
    REQUIRED.update(asked)


def unavailable(what: str, why: str) -> NoReturn:
    """Skip the test for want of ``what`` (one of :data:`KNOWN`), or fail it where the run requires it."""
    if what not in KNOWN:
        raise ValueError(f"{what!r} is not one of {sorted(KNOWN)}")
    if what in REQUIRED:
        pytest.fail(f"--require={what}, but {why}")
    pytest.skip(why)


def needs_bwrap() -> None:
    """The grading sandbox's bubblewrap, or skip (fail under ``--require=sandbox``)."""
    if shutil.which("bwrap") is None:
        unavailable("sandbox", "bubblewrap not installed (apt-get install bubblewrap)")
