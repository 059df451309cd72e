"""The project's files that some code runs: the closure of its imports within the project, read from the source.

What decides a verdict is derived with it (:func:`graders.check.mutants_ledger.verdict_files`): a module the
grader imports, however indirectly (``graders.coursedir``, ``zygote.frames``, ``labutils.deploy``), is in the set
the day the import is written, with the packages whose ``__init__`` runs on the way. Imports of modules outside
the project (the standard library, torch, nbgrader) are not followed: the venv's lock pins them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from graders.grader.parsing import parse

PROJECT = Path(__file__).resolve().parents[2]
PACKAGES = ("graders", "zygote", "labutils")


def module_name(path: Path) -> str:
    """``graders/inside/job.py`` -> ``graders.inside.job``; a package's ``__init__.py`` -> the package."""
    parts = path.resolve().relative_to(PROJECT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_file(name: str) -> Path | None:
    """The project file that defines module ``name``, or None (not the project's, or not a module)."""
    parts = name.split(".")
    if parts[0] not in PACKAGES:
        return None
    base = PROJECT.joinpath(*parts)
    return next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)


def imported(source: str, name: str, is_package: bool = False) -> set[str]:
    """Every dotted name the module ``name`` (its ``source``) imports, at any depth of its code; ``from a import
    b`` gives both ``a`` and ``a.b`` (b may be a submodule)."""
    found: set[str] = set()
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join([*base, node.module] if node.module else base)
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def with_packages(name: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``: importing a module runs each package's ``__init__`` on the way."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def closure(files: Iterable[Path] = (), sources: Iterable[tuple[str, str]] = ()) -> tuple[str, ...]:
    """The project files that ``files`` and ``sources`` (``(module name, text)`` pairs not on disk) run,
    themselves included, as sorted paths relative to the project's root."""
    files = [f.resolve() for f in files]
    seen: set[Path] = set(files)
    todo = [(module_name(f), f.read_text(encoding="utf-8"), f.name == "__init__.py") for f in files]
    todo += [(name, text, False) for name, text in sources]

    def reach(module: str) -> None:
        path = module_file(module)
        if path is not None and path not in seen:
            seen.add(path)
            todo.append((module, path.read_text(encoding="utf-8"), path.name == "__init__.py"))

    for name, _, _ in list(todo):  # the packages a seed is imported through
        for package in with_packages(name)[:-1]:
            reach(package)
    while todo:
        name, text, is_package = todo.pop()
        for target in imported(text, name, is_package):
            for module in with_packages(target):
                reach(module)
    return tuple(sorted(p.relative_to(PROJECT).as_posix() for p in seen))
