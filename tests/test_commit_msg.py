"""ci/commit_msg.py, the pre-commit commit-msg check: subjects of at most 72 characters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ci.commit_msg import problems

ROOT = Path(__file__).resolve().parents[1]


def test_a_short_subject_passes_and_a_long_one_fails() -> None:
    assert (
        problems("Fix the salt\n\nA body line that may be as long as it likes, " + "x" * 100 + "\n# comment")
        == []
    )
    assert problems("x" * 72) == []
    assert problems("x" * 73) == [f"the subject is 73 characters, at most 72: {'x' * 72}..."]
    assert problems("subject\nbody right after") == [
        "the subject is followed by a blank line before the body"
    ]
    assert problems("# only a comment\n") == ["the subject line is empty"]


def test_the_hook_exits_1_with_one_line(tmp_path: Path) -> None:
    message = tmp_path / "COMMIT_EDITMSG"
    message.write_text("y" * 80 + "\n")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "ci" / "commit_msg.py"), str(message)], capture_output=True, text=True
    )
    assert proc.returncode == 1 and proc.stderr.startswith("commit message: the subject is 80 characters")
    message.write_text("Short\n")
    assert subprocess.run([sys.executable, str(ROOT / "ci" / "commit_msg.py"), str(message)]).returncode == 0
