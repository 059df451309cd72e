"""graders.inside.draws: a probe's structured examples depend on the salt and the probe only. Not on which
modules happen to be loaded (Hypothesis would otherwise try literals from their source), not on the CI
profile, and nothing is written to disk (the sandbox's file system is read-only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import strategies as st

from graders.inside.draws import examples
from graders.inside.probing import Draw

ROOT = Path(__file__).resolve().parent.parent
LOCAL_CONSTANTS = [1_000_003 + i for i in range(300)]
SCRIPT = f"""
import json, sys
sys.path[:0] = [{str(ROOT)!r}, "."]
if sys.argv[1:] == ["load"]:
    import local_constants
from hypothesis import strategies as st
from graders.inside.draws import examples
from graders.inside.probing import Draw
print(json.dumps(examples(Draw(7, "probe"), st.lists(st.integers(), max_size=20), 50)))
"""


def drawn(folder: Path, *args: str, env: dict | None = None) -> list:
    """The examples a fresh interpreter draws in ``folder`` (``load``: after importing a local module)."""
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return json.loads(result.stdout)


def test_examples_ignore_loaded_modules_and_profile_and_write_nothing(tmp_path: Path) -> None:
    (tmp_path / "local_constants.py").write_text(
        "".join(f"K{i} = {v}\n" for i, v in enumerate(LOCAL_CONSTANTS))
    )
    plain = drawn(tmp_path)
    assert drawn(tmp_path, "load") == plain
    assert drawn(tmp_path, env={"CI": "1"}) == plain
    assert not set(LOCAL_CONSTANTS) & {v for example in plain for v in example}
    written = sorted(
        p.name for p in tmp_path.iterdir() if p.name != "__pycache__"
    )  # Python's, for the import
    assert written == ["local_constants.py"]  # no .hypothesis database


def test_examples_follow_the_salt_and_the_probe() -> None:
    strategy = st.lists(st.integers(0, 1000), min_size=1, max_size=6)
    first = examples(Draw(1, "a"), strategy, 20)
    assert first == examples(Draw(1, "a"), strategy, 20)
    assert len(first) == 20 and all(1 <= len(e) <= 6 for e in first)
    assert first != examples(Draw(2, "a"), strategy, 20)
    assert first != examples(Draw(1, "b"), strategy, 20)


def test_examples_stop_at_the_strategys_distinct_values() -> None:
    assert sorted(examples(Draw(3, "c"), st.booleans(), 10)) == [False, True]
