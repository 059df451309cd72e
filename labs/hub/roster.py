"""The class list: ``--class roster.csv``, one person a line, ``name`` and an optional ``email``.

A first line ``name,email`` (any case) is a header. Names are unix user names (lower-case letters, digits,
``-`` and ``_``, starting with a letter); blank lines and lines starting with ``#`` are skipped.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from labs.hub.plan import USER_NAME


@dataclass(frozen=True)
class Person:
    """One line of the roster."""

    name: str
    email: str = ""


def read_roster(path: Path) -> list[Person]:
    """The people of ``path``, in its order; ValueError names the line that is wrong."""
    people: list[Person] = []
    with path.open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            cells = [cell.strip() for cell in row]
            if not cells or not cells[0] or cells[0].startswith("#"):
                continue
            if number == 1 and cells[0].lower() == "name":
                continue
            name, email = cells[0], cells[1] if len(cells) > 1 else ""
            if not USER_NAME.match(name):
                raise ValueError(
                    f"{path}:{number}: {name!r} is not a user name (lower-case letters, digits, - or _, "
                    "starting with a letter, at most 32)"
                )
            if email and "@" not in email:
                raise ValueError(f"{path}:{number}: {email!r} is not an e-mail address")
            if any(p.name == name for p in people):
                raise ValueError(f"{path}:{number}: {name} is listed twice")
            people.append(Person(name, email))
    if not people:
        raise ValueError(f"{path}: no one in the class list")
    return people
