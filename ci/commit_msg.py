"""The commit-msg check of .pre-commit-config.yaml: a subject line of at most 72 characters, then a blank line.

python ci/commit_msg.py .git/COMMIT_EDITMSG      # exit 1 and one line saying why, else 0
"""

from __future__ import annotations

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


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: commit_msg.py MESSAGE_FILE", file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        found = problems(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        print(f"{path}: cannot read the commit message ({err})", file=sys.stderr)
        return 2
    for line in found:
        print(f"commit message: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
