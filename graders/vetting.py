"""Vet a submission's solution cells in the trusted grader, before any of them runs.

The rule recorders of :mod:`graders.rules` run in the interpreter the student's code runs in, so on
their own they hold only against code that cannot reach them. This module makes sure graded code
cannot: each solution cell is parsed here (the grader, never the sandbox) and checked against one
policy for graded code. A cell that breaks it never runs; its exercise scores 0 and the student is
told the line and the rule. What the policy refuses is reflection and escape, not ordinary PyTorch:

* no code from strings or names computed at run time (``eval``, ``exec``, ``compile``, ``getattr``,
  ``setattr``, ``globals``, ``vars``, ``open``, magics and ``get_ipython``, ``operator.attrgetter`` ...);
* no private or dunder attributes, except the few a lesson teaches (``_version``, ``_base``,
  ``_saved_*``, ``torch._dynamo``, ``__init__``, ``__name__``, ``__code__`` ...) and a class's own
  (``self._cache``), and no assignment to
  any dunder attribute or to an attribute of an imported module (``torch.Tensor.t = ...``);
* no frames, garbage-collector walks, ``sys``/``os``/threads/processes: by import or by attribute
  (``torch.sys``), so nothing reaches the probes, the recorders or the grader's code;
* imports only of the libraries a lab needs (torch's public modules, numpy, the standard library's
  pure-computation modules, labutils, onnx, onnxruntime);
* no class hooks that run code behind the grader's back (``__torch_dispatch__``, ``__del__``,
  ``__getattribute__``, metaclasses ...).

An exercise may also state rules of its own (``@probe(..., forbid=("transpose", ...))``): names its
solution, and every solution-cell function or class it uses, must not mention. The same rule is
checked again where the code runs, by the probe's recorder: "both ways".
"""

from __future__ import annotations

import ast
import functools
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from IPython.core.inputtransformer2 import TransformerManager

#: Modules graded code may import (and their public submodules).
ALLOWED_IMPORTS = frozenset({
    "torch", "numpy", "math", "cmath", "random", "statistics", "time", "collections", "itertools",
    "functools", "operator", "dataclasses", "typing", "contextlib", "copy", "enum", "abc", "heapq", "bisect",
    "re", "string", "warnings", "numbers", "fractions", "decimal", "inspect", "textwrap", "json",
    "labutils", "onnx", "onnxruntime", "sklearn"})
#: Public submodules that run native code, start processes or load code: never from graded code.
DENIED_MODULES = frozenset({"torch.utils.cpp_extension", "torch.multiprocessing", "torch.hub", "torch.package",
                            "torch.distributed.rpc", "torch.distributed.elastic", "torch.distributed.run",
                            "torch.utils.data.datapipes", "numpy.ctypeslib", "labutils.launch"})
#: Builtins (and notebook names) that run code from strings or reach objects by computed names.
DENIED_NAMES = frozenset({"eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr", "globals",
                          "locals", "vars", "open", "breakpoint", "input", "help", "exit", "quit", "get_ipython",
                          "memoryview", "__builtins__", "__loader__", "__spec__"})
#: Private attributes the lessons teach; a trailing ``*`` matches any suffix.
ALLOWED_PRIVATE = ("_version", "_base", "_is_view", "_dynamo", "_foreach_*", "_check*", "_saved_*", "_raw_saved_*",
                   "__init__", "__name__", "__qualname__", "__doc__", "__code__", "__len__", "__call__")
#: What graded code may use of an allowed private module (``torch._dynamo`` holds frame hooks otherwise).
PRIVATE_MEMBERS = {"_dynamo": frozenset({"explain", "reset"})}
#: A class's own private attribute (``self._cache``) may not carry the name of torch's internals: a method
#: called with a module as ``self`` (``Net.forward(torch)``) would reach them.
TORCH_INTERNALS = frozenset({"_C", "_ops", "_python_dispatch", "_dynamo", "_subclasses", "_functorch", "_library",
                             "_guards", "_prims", "_refs", "_inductor", "_decomp", "_higher_order_ops", "_utils"})
#: Public attribute names that lead to frames, modules that escape, or computed attribute access.
DENIED_ATTRIBUTES = frozenset({
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next", "gi_frame",
    "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code",
    "sys", "os", "gc", "builtins", "importlib", "ctypes", "ctypeslib", "threading", "subprocess", "multiprocessing",
    "signal", "marshal", "pickle", "shutil", "socket", "resource", "posix", "mmap", "runpy", "types",
    "weakref", "cpp_extension", "load_library", "load_inline", "hub", "package", "currentframe",
    "getouterframes", "getinnerframes", "getframeinfo", "getmembers", "getmembers_static", "getattr_static",
    "getclosurevars", "setprofile", "settrace", "getprofile", "gettrace", "get_objects", "get_referrers",
    "get_referents", "attrgetter", "methodcaller", "format_map", "fork", "system", "popen", "spawn", "execv",
    "execve", "kill"})
#: What graded code may use of ``inspect`` (the rest of it reaches frames and members by name).
INSPECT_ALLOWED = frozenset({"getsource", "getsourcelines", "signature", "Parameter", "Signature", "getdoc", "cleandoc",
                             "isclass", "isfunction", "ismethod", "isgenerator", "isgeneratorfunction", "unwrap"})
#: Methods a class of graded code may not define: they run code where the grader does not look.
DENIED_METHODS = frozenset({"__torch_dispatch__", "__torch_function__", "__del__", "__getattribute__", "__getattr__",
                            "__setattr__", "__delattr__", "__init_subclass__", "__set_name__", "__reduce__",
                            "__reduce_ex__", "__setstate__", "__class_getitem__", "__instancecheck__",
                            "__subclasscheck__", "__prepare__", "__mro_entries__"})
#: Keywords that turn loading data into running code.
UNSAFE_KEYWORDS = {"weights_only": False, "allow_pickle": True}

_TRANSFORMER = TransformerManager()
_PARSE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Finding:
    """One place a cell breaks the policy: its line (1-based, of the cell) and what is not allowed."""

    line: int
    what: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.what}"


def _allowed_private(name: str) -> bool:
    return any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in ALLOWED_PRIVATE)


def _module_allowed(module: str) -> bool:
    parts = module.split(".")
    return (parts[0] in ALLOWED_IMPORTS and not any(p.startswith("_") and not _allowed_private(p) for p in parts)
            and not any(module == d or module.startswith(d + ".") for d in DENIED_MODULES))


class _Policy(ast.NodeVisitor):
    """Collects every :class:`Finding` of one cell's syntax tree."""

    def __init__(self, module_names: set[str], own_private: set[str]) -> None:
        self.findings: list[Finding] = []
        self.module_names = set(module_names)
        self.own_private = own_private
        self.inspect_names: set[str] = set()

    def refuse(self, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(getattr(node, "lineno", 1), what))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_import(node, alias.name)
            if alias.asname and "._" in alias.name:
                self.refuse(node, f"a name of its own for the private module '{alias.name}'")
            self.module_names.add((alias.asname or alias.name).split(".")[0])
            if alias.name == "inspect":
                self.inspect_names.add(alias.asname or alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.refuse(node, "a relative import")
            return
        self._check_import(node, module)
        for alias in node.names:
            if alias.name == "*":
                self.refuse(node, f"'from {module} import *'")
            elif alias.name.startswith("_"):
                self.refuse(node, f"importing the private name '{alias.name}'")
            elif module.rsplit(".", 1)[-1] in PRIVATE_MEMBERS and \
                    alias.name not in PRIVATE_MEMBERS[module.rsplit(".", 1)[-1]]:
                self.refuse(node, f"importing '{module}.{alias.name}'")
            elif (f"{module}.{alias.name}" in DENIED_MODULES or alias.name in DENIED_ATTRIBUTES
                  or (module == "inspect" and alias.name not in INSPECT_ALLOWED)):
                self.refuse(node, f"importing '{module}.{alias.name}'")
            self.module_names.add(alias.asname or alias.name)
            if module == "inspect" or alias.name == "inspect":
                self.inspect_names.add(alias.asname or alias.name)

    def _check_import(self, node: ast.AST, module: str) -> None:
        if not _module_allowed(module):
            self.refuse(node, f"importing '{module}' (graded code may import torch, numpy, labutils and "
                              "the standard library's computation modules)")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in DENIED_NAMES or (node.id.startswith("__") and node.id != "__name__"):
            self.refuse(node, f"'{node.id}'")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = node.attr
        own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls") and name in self.own_private
        inside = node.value.attr if isinstance(node.value, ast.Attribute) else ""
        if name.startswith("_") and not own and not _allowed_private(name):
            self.refuse(node, f"the private attribute '.{name}'")
        elif inside in PRIVATE_MEMBERS and name not in PRIVATE_MEMBERS[inside]:
            self.refuse(node, f"the attribute '.{inside}.{name}' (of '{inside}' only {sorted(PRIVATE_MEMBERS[inside])})")
        elif name in DENIED_ATTRIBUTES or (isinstance(node.value, ast.Name) and node.value.id in self.inspect_names
                                           and name not in INSPECT_ALLOWED):
            self.refuse(node, f"the attribute '.{name}'")
        elif not isinstance(node.ctx, ast.Load) and (name.startswith("__") or self._on_module(node.value)):
            self.refuse(node, f"changing '.{name}' of a module or a dunder attribute")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if self._on_module(node.value):  # ``F = torch.nn.functional``: ``F.relu = ...`` changes the module
            self.module_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        self.generic_visit(node)

    def _on_module(self, node: ast.expr) -> bool:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.module_names

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in DENIED_METHODS:
            self.refuse(node, f"defining '{node.name}'")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if any(k.arg == "metaclass" for k in node.keywords):
            self.refuse(node, "a metaclass")
        self.generic_visit(node)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg in UNSAFE_KEYWORDS and not (isinstance(node.value, ast.Constant)
                                                and node.value.value is not UNSAFE_KEYWORDS[node.arg]):
            self.refuse(node.value, f"'{node.arg}=' other than {not UNSAFE_KEYWORDS[node.arg]} (loads code)")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and "{" in node.value and _reaches_into(node.value):
            self.refuse(node, "a format string that reaches into attributes or items ('{x.attr}', '{x[k]}')")


def _reaches_into(text: str) -> bool:
    """Whether ``text`` has a replacement field that follows an attribute or an index (``str.format``'s own
    reflection: ``"{0.__globals__}"``)."""
    return any(re.fullmatch(r"\w*([.\[].*)", field.split("!")[0].split(":")[0])
               for field in re.findall(r"(?<!\{)\{([^{}]+)\}", text))


def python_of(cell_source: str) -> str:
    """A notebook cell's source as the Python IPython runs (magics become ``get_ipython()`` calls)."""
    return _TRANSFORMER.transform_cell(cell_source)


@functools.lru_cache(maxsize=512)
def _parsed(source: str) -> ast.Module | None:
    """The syntax tree of the Python IPython runs for ``source``; None when it does not parse. Source that
    parses as Python already is what IPython runs (its transforms rewrite only what is not Python).

    Cached (a rule is read over the same solution cells once per test cell; the trees are never changed).
    One parse at a time: CPython 3.11's ``ast.parse`` in two threads at once can raise ``SystemError``
    ("AST constructor recursion depth mismatch"), and submissions are graded from a thread pool.
    """
    for text in (source, None):
        try:
            with _PARSE_LOCK:
                return ast.parse(source if text is not None else python_of(source))
        except (SyntaxError, ValueError):
            continue
    return None


def vet(cell_source: str, module_names: Iterable[str] = ()) -> list[Finding]:
    """Every place ``cell_source`` breaks the policy for graded code (empty: it may run).

    ``module_names``: names the notebook binds to modules elsewhere (``torch``, ``F``, ``dist``), whose
    attributes graded code must not reassign. A cell that does not parse breaks no rule: it raises
    ``SyntaxError`` when it runs, like any other broken cell.
    """
    tree = _parsed(cell_source)
    if tree is None:
        return []
    policy = _Policy(set(module_names), _own_private(tree))
    policy.visit(tree)
    return sorted(set(policy.findings), key=lambda f: (f.line, f.what))


def _own_private(tree: ast.Module) -> set[str]:
    """Private attributes the cell's own classes set (``self._cache = ...``): those they may read back."""
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls") and n.attr.startswith("_")
            and not n.attr.startswith("__") and n.attr not in TORCH_INTERNALS}


@functools.lru_cache(maxsize=64)
def imported_names(sources: tuple[str, ...]) -> frozenset[str]:
    """The names that the ``import`` statements of ``sources`` bind (``torch``, ``F``, ``np``); cached: a
    batch asks once per submission about the same source notebook."""
    found: set[str] = set()
    for source in (s for s in sources if "import" in s):
        tree = _parsed(source)
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Import):
                found.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                found.update(a.asname or a.name for a in node.names if a.name != "*")
    return frozenset(found)


def _top_level_names(statement: ast.stmt) -> set[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _walk_code(node: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk`` without annotations: a type hint names ``torch.Tensor`` but runs nothing of it."""
    yield node
    for name, value in ast.iter_fields(node):
        if name in ("annotation", "returns"):
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from _walk_code(child)


def _mentioned(node: ast.AST) -> dict[str, int]:
    """Every identifier ``node`` mentions and its first line: ``name`` for names and imported names,
    ``.name`` for attributes (so a rule can forbid ``.t`` without forbidding a variable ``t``)."""
    found: dict[str, int] = {}
    for sub in _walk_code(node):
        names = [sub.id] if isinstance(sub, ast.Name) else [sub.attr, "." + sub.attr] \
            if isinstance(sub, ast.Attribute) else []
        if isinstance(sub, (ast.Import, ast.ImportFrom)):
            names = [part for a in sub.names for part in (*a.name.split("."), a.asname or "")]
            names += (sub.module or "").split(".") if isinstance(sub, ast.ImportFrom) else []
        for name in filter(None, names):
            found.setdefault(name, getattr(sub, "lineno", 1))
    return found


Uses = dict[str, list[tuple[str, ast.stmt]]]  # a top-level name -> (solution grade_id, statement) binding it


def _definitions(solutions: dict[str, str]) -> Uses:
    found: Uses = {}
    for grade_id, source in solutions.items():
        tree = _parsed(source)
        for statement in tree.body if tree else []:
            for name in _top_level_names(statement):
                found.setdefault(name, []).append((grade_id, statement))
    return found


def _reachable(starts: list[tuple[str, ast.stmt]], definitions: Uses) -> list[tuple[str, ast.stmt]]:
    """``starts`` and every top-level statement they use, by name, to any depth (each once, in order)."""
    todo, seen, found = list(reversed(starts)), set(), []
    while todo:
        cell, statement = todo.pop()
        if id(statement) not in seen:
            seen.add(id(statement))
            found.append((cell, statement))
            todo += reversed([d for name in _mentioned(statement) for d in definitions.get(name, [])])
    return found


def _recursion(reached: list[tuple[str, ast.stmt]], definitions: Uses, exercise: str) -> list[Finding]:
    """Functions among ``reached`` that call themselves, directly or through others (nested ones directly)."""
    found = []
    for cell, statement in reached:
        where = "" if cell == exercise else f" (in '{cell}', which it uses)"
        uses = [d for name in _mentioned(statement) for d in definitions.get(name, [])]
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                any(s is statement for _, s in _reachable(uses, definitions)):
            found.append(Finding(statement.lineno, f"'{statement.name}' calls itself{where}"))
        for node in ast.walk(statement):
            if node is not statement and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    any(isinstance(n, ast.Name) and n.id == node.name for n in ast.walk(node)):
                found.append(Finding(node.lineno, f"'{node.name}' calls itself{where}"))
    return found


def stated_rule_breaks(solutions: dict[str, str], exercise: str, names: Iterable[str] = (),
                       iterative: bool = False) -> list[Finding]:
    """Where the solution cell ``exercise``, or code of other solution cells it uses, mentions one of ``names``
    (``"transpose"``: any name, attribute or import of it; ``".t"``: only an attribute), and, when it must be
    ``iterative``, where a function of it calls itself.

    ``solutions``: solution grade_id -> source. What the exercise's cell uses is followed through the
    top-level functions, classes and assignments of every solution cell, by name, to any depth.
    """
    forbidden, definitions = set(names), _definitions(solutions)
    start = _parsed(solutions.get(exercise, ""))
    reached = _reachable([(exercise, s) for s in (start.body if start else [])], definitions)
    findings = []
    for cell, statement in reached:
        where = "" if cell == exercise else f" (in '{cell}', which it uses)"
        findings += [Finding(line, f"mentions '{name.lstrip('.')}', which this exercise forbids{where}")
                     for name, line in _mentioned(statement).items() if name in forbidden]
    if iterative:
        findings += _recursion(reached, definitions, exercise)
    return sorted(set(findings), key=lambda f: (f.line, f.what))
