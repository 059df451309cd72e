"""Ship a function to a fresh Python process: by import path when it can, by source when it must.

A function defined in an importable module travels as ``module:qualname``. A function defined in
a notebook (``__main__``) cannot be imported by a spawned rank, so its source is written into a
temporary module together with what it needs from the notebook's globals:

* modules it uses (``torch``, ``dist`` ...) become ``import`` lines;
* objects importable from a module (``DDP``, ``fully_shard`` ...) become ``from ... import`` lines;
* other notebook functions it calls are shipped the same way (recursively);
* simple constants (numbers, strings, tuples of them ...) are copied by value;
* names its ``def`` line evaluates (defaults, decorators) count as used; its annotations are never evaluated
  on the ranks (the module starts with ``from __future__ import annotations``), so a name used only in a
  type hint need not travel.

Anything else (a tensor, a model, a class defined in the notebook) raises :class:`ShipError`:
pass it as an argument, or create it inside the function.
"""

from __future__ import annotations

import ast
import builtins
import dis
import inspect
import sys
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ShipError(TypeError):
    """A function (or one of the globals it uses) cannot be sent to another process."""


@dataclass(frozen=True)
class Target:
    """Where a rank finds the function: ``module`` + ``qualname``, from ``path`` when shipped by source."""

    module: str
    qualname: str
    path: str | None = None


def importable_name(obj: Any) -> tuple[str, str] | None:
    """``(module, qualname)`` when a fresh interpreter can import ``obj`` by name, else None."""
    module_name = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not module_name or not qualname or module_name == "__main__" or "<locals>" in qualname:
        return None
    found: Any = sys.modules.get(module_name)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return (module_name, qualname) if found is obj else None


def global_names(code: types.CodeType) -> set[str]:
    """Names a code object (and the functions/comprehensions nested in it) loads as globals."""
    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= global_names(const)
    return names


def _is_literal(value: Any) -> bool:
    try:
        return ast.literal_eval(repr(value)) == value and type(value) in (
            bool,
            int,
            float,
            complex,
            str,
            bytes,
            tuple,
            list,
            dict,
            set,
            frozenset,
            type(None),
        )
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return False


def _binding(name: str, value: Any) -> str | None:
    """The line that recreates global ``name``, or None when ``value`` is a function to ship."""
    if isinstance(value, types.ModuleType):
        return f"import {value.__name__}" if value.__name__ == name else f"import {value.__name__} as {name}"
    located = importable_name(value)
    if located is not None:
        module, qualname = located
        if "." not in qualname:
            return f"from {module} import {qualname}" + ("" if qualname == name else f" as {name}")
        return f"import {module} as _shipped_{name}\n{name} = _shipped_{name}.{qualname}"
    if isinstance(value, types.FunctionType):
        return None
    if _is_literal(value):
        return f"{name} = {value!r}"
    raise ShipError(
        f"global {name!r} ({type(value).__name__}) cannot be sent to the ranks: pass it as an "
        "argument (tensors, numbers, strings, lists, dicts) or create it inside the function"
    )


def def_line_names(source: str) -> set[str]:
    """Names a function's ``def`` evaluates when it runs: in its decorators and default values."""
    tree = ast.parse(source)
    if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    node = tree.body[0]
    evaluated = [
        *node.decorator_list,
        *node.args.defaults,
        *(d for d in node.args.kw_defaults if d is not None),
    ]
    return {n.id for expr in evaluated for n in ast.walk(expr) if isinstance(n, ast.Name)}


def _function_source(fn: types.FunctionType) -> str:
    if fn.__name__ == "<lambda>":
        raise ShipError("a lambda cannot be shipped by source: define it with def")
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError) as exc:
        raise ShipError(f"no source found for {fn.__qualname__}: {exc}") from exc
    return textwrap.dedent(source)


def module_source(fn: types.FunctionType) -> str:
    """Source of a module that defines ``fn`` and everything it needs from its globals."""
    headers: dict[str, str] = {}
    bodies: dict[str, str] = {}
    aliases: dict[str, str] = {}
    pending: list[tuple[str, types.FunctionType]] = [(fn.__name__, fn)]
    while pending:
        name, func = pending.pop()
        if func.__name__ in bodies:
            if name != func.__name__:
                aliases[name] = func.__name__
            continue
        bodies[func.__name__] = _function_source(func)
        if name != func.__name__:
            aliases[name] = func.__name__
        for global_name in sorted(global_names(func.__code__) | def_line_names(bodies[func.__name__])):
            if global_name not in func.__globals__:
                continue  # a builtin, or a NameError the rank will report with its traceback
            value = func.__globals__[global_name]
            if value is getattr(builtins, global_name, object()):
                continue
            line = _binding(global_name, value)
            if line is None:
                pending.append((global_name, value))
            else:
                headers[global_name] = line
    parts = [
        "# Shipped by labutils.launch: notebook functions and the globals they use.",
        "from __future__ import annotations  # type hints stay text: a name used only in one need not travel",
        *headers.values(),
        "",
        *(body + "\n" for body in bodies.values()),
        *(f"{alias} = {real}" for alias, real in aliases.items()),
    ]
    return "\n".join(parts) + "\n"


def ship(fn: Any, folder: Path) -> Target:
    """Make ``fn`` loadable by a rank: import path if possible, else a source module in ``folder``."""
    if not callable(fn):
        raise ShipError(f"expected a function, got {type(fn).__name__}")
    located = importable_name(fn)
    if located is not None:
        return Target(*located)
    if not isinstance(fn, types.FunctionType):
        raise ShipError(f"{fn!r} is neither importable nor a plain function defined with def")
    path = folder / "shipped_functions.py"
    path.write_text(module_source(fn))
    return Target("labutils_shipped_functions", fn.__name__, str(path))
