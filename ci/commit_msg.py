"""The commit-msg check of .pre-commit-config.yaml: a subject line of at most 72 characters, then a blank line.

python ci/commit_msg.py .git/COMMIT_EDITMSG      # exit 1 and one line saying why, else 0
python ci/commit_msg.py --since REV              # every commit after REV on this branch (make style: CI)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MAX_SUBJECT = 72


def problems(message: str) -> list[str]:
    """What is wrong with a commit message (git's comment lines ignored)."""
    lines = [line for line in message.splitlines() if not line.startswith("#")]
    if not lines or not lines[0].strip():
        return ["the subject line is empty"]
    found = []
    if len(lines[0]) > MAX_SUBJECT:
        found.append(
            f"the subject is {len(lines[0])} characters, at most {MAX_SUBJECT}: {lines[0][:MAX_SUBJECT]}..."
        )
    if len(lines) > 1 and lines[1].strip():
        found.append("the subject is followed by a blank line before the body")
    return found


def history_problems(since: str) -> list[str]:
    """What is wrong with the subject of each commit after ``since`` (``git log since..HEAD``), one line each."""
    log = subprocess.run(
        ["git", "log", "--format=%h %s", f"{since}..HEAD"], capture_output=True, text=True, check=False
    )
    if log.returncode:
        raise RuntimeError(f"git log {since}..HEAD: {(log.stderr.strip() or 'failed').splitlines()[0]}")
    found = []
    for line in log.stdout.splitlines():
        commit, _, subject = line.partition(" ")
        found += [f"{commit}: {problem}" for problem in problems(subject)]
    return found


def report(label: str, found: list[str]) -> int:
    """Each problem on a line of its own (stderr); 1 when there is any, else 0."""
    for line in found:
        print(f"{label}: {line}", file=sys.stderr)
    return 1 if found else 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--since":
        try:
            return report("commit subject", history_problems(argv[1]))
        except (OSError, RuntimeError) as err:
            print(f"commit subjects: {err} (a clone without that history: fetch it)", file=sys.stderr)
            return 2
    if len(argv) != 1:
        print("usage: commit_msg.py MESSAGE_FILE | --since REV", file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        return report("commit message", problems(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError) as err:
        print(f"{path}: cannot read the commit message ({err})", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
