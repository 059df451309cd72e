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


def test_the_history_since_a_commit_is_checked(tmp_path: Path) -> None:
    """`make style` checks every commit after the rule's first: a long subject there fails, one before it does
    not count, and a revision the clone lacks is one line and exit 2."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    def check(since: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(ROOT / "ci" / "commit_msg.py"), "--since", since],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )

    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "z" * 90)
    rule = git("rev-parse", "HEAD")
    git("commit", "-q", "--allow-empty", "-m", "A short one")
    assert check(rule).returncode == 0
    git("commit", "-q", "--allow-empty", "-m", "w" * 73)
    late = check(rule)
    assert late.returncode == 1 and "the subject is 73 characters" in late.stderr
    assert len(late.stderr.splitlines()) == 1
    missing = check("f" * 40)
    assert missing.returncode == 2 and len(missing.stderr.splitlines()) == 1
