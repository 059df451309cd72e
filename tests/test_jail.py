"""The jail's own checks that need no sandbox: whether another uid could reach the Python installation."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from graders.inside.jail import unreadable_ancestor


def test_a_private_folder_on_the_way_is_named():
    top = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        private = top / "private"
        (private / "python" / "lib").mkdir(parents=True)
        for folder in (private / "python", private / "python" / "lib"):  # open whatever the umask was
            os.chmod(folder, 0o755)
        os.chmod(private, 0o700)
        assert unreadable_ancestor(str(private / "python" / "lib")) == str(private)
        os.chmod(private, 0o711)  # enter but not list: another uid reaches what it knows the name of
        assert unreadable_ancestor(str(private / "python" / "lib")) is None
    finally:
        shutil.rmtree(top)


def test_public_folders_are_reachable():
    assert unreadable_ancestor("/usr/bin") is None
