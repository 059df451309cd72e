"""The salts of a class: one secret per chapter, made on its first grading and kept, so every run of the
class (a regrade of one student, a shard on another machine, a late submission) draws the same inputs.

::

    <grading root>/salts/            mode 0700, the instructor's only
      02_tensors                     the chapter's salt, a decimal int (mode 0600)
      rotations.log                  one line per rotation: when, chapter, old and new fingerprints

A salt is made with ``secrets`` and published by a hard link, which fails when another run (a Slurm shard
sharing the folder) made it first: then that one is read. Rotating is the instructor's explicit act
(``labs salt --rotate``): the inputs of every later run change, and the log says when.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import tempfile
import time
from pathlib import Path

ROTATIONS_LOG = "rotations.log"
CHAPTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def fingerprint(salt: int) -> str:
    """A short public name for a salt (reports and logs show it; it cannot be turned back into the salt)."""
    return hashlib.sha256(f"labs-salt:{salt}".encode()).hexdigest()[:12]


def _path(folder: Path, chapter: str) -> Path:
    if not CHAPTER_NAME.match(chapter):
        raise ValueError(f"{chapter!r}: not a chapter name")
    return folder / chapter


def _read(path: Path) -> int:
    text = path.read_text(encoding="ascii").strip()
    if not text.isdigit():
        raise ValueError(f"{path}: not a salt (a decimal number expected)")
    return int(text)


def _publish(folder: Path, target: Path, salt: int, replace: bool) -> None:
    """Write ``salt`` to ``target`` whole or not at all: a new file linked (or renamed) into place."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".salt-")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(f"{salt}\n")
        if replace:
            os.replace(tmp, target)
        else:
            os.link(tmp, target)  # FileExistsError when another run made it first
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def chapter_salt(folder: Path, chapter: str) -> int:
    """The chapter's salt, made (and kept in ``folder``) on first use."""
    folder = _folder(folder)
    path = _path(folder, chapter)
    if not path.exists():
        try:
            _publish(folder, path, secrets.randbits(62), replace=False)
        except FileExistsError:
            pass
    return _read(path)


def kept_salt(folder: Path, chapter: str) -> int | None:
    """The chapter's salt if one was made (None before its first grading); nothing is created."""
    path = _path(folder, chapter)
    return _read(path) if path.is_file() else None


def rotate(folder: Path, chapter: str) -> tuple[int | None, int]:
    """A new salt for ``chapter`` in ``folder`` (the old one, or None, and the new), recorded in the rotations log."""
    folder = _folder(folder)
    path = _path(folder, chapter)
    old = _read(path) if path.exists() else None
    new = secrets.randbits(62)
    _publish(folder, path, new, replace=True)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(folder / ROTATIONS_LOG, "a", encoding="utf-8") as log:
        log.write(f"{when} {chapter} {fingerprint(old) if old is not None else '-'} -> {fingerprint(new)}\n")
    return old, new
