"""Vet a submission's solution cells in the trusted grader, before any of them runs: an allowlist.

The rule recorders of :mod:`graders.inside.rules` run in the interpreter the student's code runs in, so on
their own they hold only against code that cannot reach them. This module makes sure graded code
cannot: each solution cell is parsed here (the grader, never the sandbox) and every name in it is
checked against what graded code may use. A cell that uses anything else never runs; its exercise
scores 0 and the student is told the line and the rule. The model is RestrictedPython's (a whitelist
compiler: no underscore names, guarded attribute access), applied to the syntax tree alone:

* **Names.** No name or attribute that starts with an underscore, except a short list the lessons teach
  (``_version``, ``_base``, ``_saved_*``, ``__init__``, ``__name__`` ...) and single-underscore names the
  cell binds itself; no private attribute of anything, a class's own included (a method may be called with
  any object as ``self``). Every identifier counts: names, attributes, parameters,
  class-pattern keywords (``case object(__globals__=g)``), ``global`` names, keyword arguments. Builtins
  only from :data:`ALLOWED_BUILTINS` (no ``eval``, ``getattr``, ``vars``, ``open``, ``type`` with three
  arguments); no string that names a dunder; ``str.format`` only on a literal whose fields do not reach
  into attributes; no string annotations (``typing`` would evaluate them).
* **Modules are never values.** A module may only be imported and used as the base of an attribute
  chain (``torch.nn.functional.relu``), which is resolved here, step by step, on the real modules: each
  step must be a public member of that module, a member defined by an allowed module (not one it
  imported: ``torch.inspect``, ``enum.bltns``, ``dataclasses.inspect`` and ``torch.cuda.tunable.mp`` are
  other modules), and not denied. A module name passed, stored, put in a list or looped over
  (``for m in (torch,)``, ``[torch][0]``) is refused, so every access to a module is one this module
  resolved, and no attribute of a module or of a class named through one is assigned.
* **Which modules.** :data:`ALLOWED_ROOTS` (torch, numpy, math and the standard library's pure-computation
  modules, the course's ``labutils``) minus :data:`DENIED`: the parts that start processes or threads,
  register operators, load native code or hand out frames and modules (``torch.library``,
  ``torch.multiprocessing``, ``torch.cuda.tunable``, ``torch.compile``, ``torch.distributed``,
  ``torch.utils.data``, ``typing.get_type_hints`` ...). A lab that needs one of them uses it in its own
  solution cells: what the reference uses is allowed in that lab (:func:`imported_names`).

An exercise may also state rules of its own (``@probe(..., forbid=("transpose", ...))``): names its
solution, and every solution-cell function or class it uses, must not mention (:func:`stated_rule_breaks`,
linear in the cells' size). The same rule is checked again where the code runs, by the probe's recorder.

Every check is linear in the cell's size, and a cell over ``MAX_CELL_BYTES`` or ``MAX_BRACES`` is refused
before it is parsed (:func:`graders.grader.parsing.read_cell`, thread-safe), and IPython's transformer never runs:
a cell that is not plain Python (a magic, a shell escape) is refused, since graded code may use neither.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib
import importlib.machinery
import importlib.util
import os
import re
import subprocess
import sys
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from graders.grader.parsing import Unread, read_cell

#: The most names a solution cell may import (the course's solution cells import at most a few): each one the
#: grader resolves loads its module, and hundreds would load thousands of modules into the trusted grader.
MAX_IMPORTS = 32
#: Top-level modules graded code may import and use (of each, what :func:`_step` allows).
ALLOWED_ROOTS = frozenset(
    {
        "torch",
        "numpy",
        "math",
        "cmath",
        "random",
        "statistics",
        "itertools",
        "functools",
        "operator",
        "collections",
        "heapq",
        "bisect",
        "contextlib",
        # not dataclasses: @dataclass writes the source of __init__, __eq__ ... from each field's name and runs
        # it, and a Field's name can be set after its class was made (a subclass runs the new text).
        # not copy: copy.copy and deepcopy call what an object holds as __reduce_ex__ or __deepcopy__, and
        # setattr the state it returns (labs 03-05, which use deepcopy, get it as their own code does)
        "numbers",
        "fractions",
        "decimal",
        "re",
        "warnings",
        "time",
        "abc",
        "textwrap",
        "typing",
        "labutils",
        "inspect",
        "onnx",
        "onnxruntime",
    }
)
#: Module members whose name is a denied attribute's (``.compile``) but which are plain computation.
PLAIN_MEMBERS = frozenset({"re.compile"})
#: Modules and members graded code may not use unless the lab's own solution cells do (a prefix denies
#: everything under it). They start processes or threads, register operators, load native code, run
#: code from strings or hand out frames, modules and computed attributes.
DENIED = frozenset(
    {
        # library functions that look up attributes or modules by a name given at run time, read files by
        # name, or compile: update_wrapper copies attributes named by strings (``__globals__``), warnings'
        # formatters read any file line by line, set_default_tensor_type imports a dotted name, cond and
        # while_loop run dynamo
        "functools.update_wrapper",
        "functools.wraps",
        # cached_property's public attrname names the key it writes into an instance's __dict__ (a dunder
        # built at run time: __reduce_ex__, which copy then calls); make_dataclass turns field names into
        # class attributes
        "functools.cached_property",
        "dataclasses.make_dataclass",
        "warnings.formatwarning",
        "warnings.showwarning",
        "warnings.warn_explicit",
        "torch.set_default_tensor_type",
        "torch.cond",
        "torch.while_loop",
        "torch.library",
        "torch.ops",
        "torch.classes",
        "torch.multiprocessing",
        "torch.cuda.tunable",
        "torch.cuda.jiterator",
        "torch.utils.cpp_extension",
        "torch.hub",
        "torch.package",
        "torch.distributed",
        "torch.distributed.rpc",
        "torch.distributed.elastic",
        "torch.distributed.run",
        "torch.distributed.launcher",
        "torch.utils.data",
        "torch.utils.benchmark",
        "torch.utils.collect_env",
        "torch.utils.bundled_inputs",
        "torch.utils.tensorboard",
        "torch.utils.model_zoo",
        "torch.utils.show_pickle",
        "torch.utils.throughput_benchmark",
        "torch.nn.parallel",
        "torch.overrides",
        "torch.compile",
        "torch.compiler",
        "torch.jit",
        "torch.fx",
        "torch.onnx",
        "torch.export",
        "torch.serialization",
        "torch.ao",
        "torch.profiler",
        "torch.autograd.profiler",
        "numpy.f2py",
        "numpy.ctypeslib",
        "numpy.testing",
        "numpy.distutils",
        "numpy.lib.format",
        "numpy.load",
        # files: graded code reads and writes none (a loader that unpickles runs code; a reader sees the sandbox's files)
        "numpy.lib.npyio",
        "numpy.lib._npyio_impl",
        "numpy.lib._datasource",
        "numpy.lib._format_impl",
        "numpy.save",
        "numpy.savez",
        "numpy.savez_compressed",
        "numpy.savetxt",
        "numpy.loadtxt",
        "numpy.genfromtxt",
        "numpy.fromfile",
        "numpy.fromregex",
        "numpy.memmap",
        "numpy.lib.DataSource",
        "torch.from_file",
        "torch.save",
        "torch.load",
        "contextlib.chdir",
        "onnx.save",
        "onnx.save_model",
        "onnx.save_tensor",
        "onnx.external_data_helper",
        "onnx.reference",
        "onnx.hub",
        "onnx.backend",
        "typing.get_type_hints",
        "typing.ForwardRef",
        "typing.get_overloads",
        "operator.attrgetter",
        "operator.methodcaller",
        "functools.singledispatch",
        "functools.singledispatchmethod",
        "copy.copyreg",
        "re.template",
        "abc.ABCMeta",
        "labutils.launch",
        "labutils.load_ipython_extension",
        "labutils.notebook",
    }
)
#: Of ``inspect``, only what hands back text (source lines, docstrings), never frames, modules or objects.
INSPECT_TEXT = frozenset({"getsource", "getsourcelines", "getdoc", "cleandoc"})
#: Builtins graded code may use (any other builtin name is refused, bound by the cell or not).
ALLOWED_BUILTINS = frozenset(
    {
        "abs",
        "all",
        "any",
        "ascii",
        "bin",
        "bool",
        "bytearray",
        "bytes",
        "callable",
        "chr",
        "classmethod",
        "complex",
        "dict",
        "divmod",
        "enumerate",
        "filter",
        "float",
        "format",
        "frozenset",
        "hasattr",
        "hash",
        "hex",
        "id",
        "int",
        "isinstance",
        "issubclass",
        "iter",
        "len",
        "list",
        "map",
        "max",
        "min",
        "next",
        "object",
        "oct",
        "ord",
        "pow",
        "print",
        "property",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "slice",
        "sorted",
        "staticmethod",
        "str",
        "sum",
        "super",
        "tuple",
        "type",
        "zip",
        "aiter",
        "anext",
        "None",
        "True",
        "False",
        "NotImplemented",
        "Ellipsis",
        *(
            name
            for name, value in vars(builtins).items()
            if isinstance(value, type) and issubclass(value, BaseException)
        ),
    }
)
#: Notebook names that reach the shell or its history.
DENIED_NAMES = frozenset({"get_ipython", "In", "Out", "display", "exit", "quit"})
#: Private attributes the lessons teach; a trailing ``*`` matches any suffix.
ALLOWED_PRIVATE = (
    "_version",
    "_base",
    "_is_view",
    "_foreach_*",
    "_check*",
    "_saved_*",
    "_raw_saved_*",
    "__init__",
    "__name__",
    "__qualname__",
    "__doc__",
    "__code__",
    "__len__",
    "__call__",
)
#: Private module members every lab's graded code may use: none. A private path is allowed only where the
#: lab's own code uses it (lab 05's ``torch._dynamo.explain``: its results reach dynamo's guards, which hold
#: weak references to modules, so a lab that does not teach it does not get it).
PRIVATE_MEMBERS: frozenset[str] = frozenset()
#: Public attribute names that lead to frames, code, other modules or computed attribute access, on any
#: object (what is not a module is checked by name: its type is not known before it runs).
DENIED_ATTRIBUTES = frozenset(
    {
        "obj",  # AttributeError.obj: the object a failed lookup was made on, whatever made it
        "f_back",
        "f_locals",
        "f_globals",
        "f_builtins",
        "f_code",
        "f_trace",
        "tb_frame",
        "tb_next",
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "co_code",
        "sys",
        "os",
        "gc",
        "builtins",
        "bltns",
        "importlib",
        "ctypes",
        "ctypeslib",
        "threading",
        "subprocess",
        "multiprocessing",
        "mp",
        "concurrent",
        "inspect",
        "tunable",
        "library",
        "signal",
        "marshal",
        "pickle",
        "shutil",
        "socket",
        "resource",
        "posix",
        "mmap",
        "runpy",
        "types",
        "weakref",
        "cpp_extension",
        "load_library",
        "load_inline",
        "import_module",
        "hub",
        "package",
        "currentframe",
        "getmodule",
        "getattr_static",
        "setprofile",
        "settrace",
        "get_objects",
        "get_referrers",
        "get_referents",
        "attrgetter",
        "methodcaller",
        "format_map",
        "get_field",
        "vformat",
        "fork",
        "system",
        "popen",
        "spawn",
        "execv",
        "execve",
        "kill",
        "get_type_hints",
        "register_custom_ops_library",
        "register_kernel",
        "register_fake",
        "register_autograd",
        "custom_op",
        "from_file",
        "fromfile",
        "tofile",
        "memmap",
        "NpzFile",
        "DataSource",
        "chdir",
        # compiling or generating code on any object (``module.compile()``: dynamo, inductor, a C++ compiler),
        # writing files (``array.dump``, a trace, a picture, a model), code objects of compiled functions
        "compile",
        "recompile",
        "compile_fx",
        "dump",
        "dumps",
        "save",
        "savefig",
        "export_chrome_trace",
        "export_stacks",
        "export_memory_timeline",
        "write_external_data_tensors",
        "load_external_data_for_tensor",
        "load_external_data_for_model",
        "func_code",
    }
)
#: Dunder methods a class of graded code may define (the data model's; no hooks on attribute access,
#: pickling, subclassing, dispatch or finalisation).
ALLOWED_DUNDER_METHODS = frozenset(
    {
        "__init__",
        "__post_init__",
        "__new__",
        "__call__",
        "__len__",
        "__getitem__",
        "__setitem__",
        "__iter__",
        "__next__",
        "__reversed__",
        "__contains__",
        "__repr__",
        "__str__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__bool__",
        "__enter__",
        "__exit__",
        "__add__",
        "__radd__",
        "__sub__",
        "__rsub__",
        "__mul__",
        "__rmul__",
        "__matmul__",
        "__truediv__",
        "__floordiv__",
        "__mod__",
        "__pow__",
        "__neg__",
        "__pos__",
        "__abs__",
        "__float__",
        "__int__",
        "__index__",
        "__iadd__",
        "__isub__",
        "__imul__",
    }
)
#: What graded code may read of a function's ``__code__`` (facts, never the code object itself).
CODE_FACTS = frozenset(
    {
        "co_firstlineno",
        "co_filename",
        "co_name",
        "co_qualname",
        "co_argcount",
        "co_kwonlyargcount",
        "co_posonlyargcount",
        "co_varnames",
        "co_nlocals",
    }
)
#: Keywords that turn loading data into running code.
UNSAFE_KEYWORDS = {"weights_only": False, "allow_pickle": True}
#: Names a notebook commonly gives modules, for callers that pass names without the imports behind them.
KNOWN_ALIASES = {
    "np": "numpy",
    "F": "torch.nn.functional",
    "nn": "torch.nn",
    "dist": "torch.distributed",
    "T": "torch",
}

_DUNDER_TEXT = re.compile(r"__\w+__")
_MISSING = object()


@dataclass(frozen=True)
class Finding:
    """One place a cell breaks the policy: its line (1-based, of the cell) and what is not allowed."""

    line: int
    what: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.what}"


@dataclass(frozen=True)
class Policy:
    """What graded code of one lab may use: the notebook's module names, and the paths and attribute names
    the lab's own code uses (those are allowed in this lab, denied or not)."""

    modules: Mapping[str, str] = field(default_factory=dict)  # notebook name -> module path
    lab_uses: frozenset[str] = frozenset()  # dotted paths the lab's own code uses
    attributes: frozenset[str] = frozenset()  # attribute names the lab's own code uses

    @functools.cached_property
    def used_prefixes(self) -> frozenset[str]:
        """Every path the lab uses and every path above one (``torch.library`` for ``torch.library.custom_op``)."""
        return frozenset(
            ".".join(parts[:end])
            for parts in (u.split(".") for u in self.lab_uses)
            for end in range(1, len(parts) + 1)
        )

    def uses(self, path: str) -> bool:
        """Whether the lab's own code uses ``path`` itself, or, when it is a module or class, a member of it."""
        return path in PRIVATE_MEMBERS or path in self.used_prefixes

    def unlocked(self, path: str) -> bool:
        """Whether the lab's own code uses ``path`` or something under it."""
        return path in self.used_prefixes

    @functools.cached_property
    def denied_objects(self) -> dict[int, str]:
        """The objects :data:`DENIED` names that are not modules, by ``id``: refused under any other path too
        (``numpy.lib.npyio.load`` is ``numpy.load``)."""
        found = {}
        for path in DENIED:
            if not self.unlocked(path) and not _is_module(path):
                value = _resolved(path)
                if value is not _MISSING:
                    found[id(value)] = path
        return found

    def denied(self, path: str) -> str | None:
        """The entry of :data:`DENIED` that covers ``path`` (None: not denied, or the lab uses it)."""
        parts = path.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            if prefix in DENIED and not self.unlocked(prefix):
                return prefix
        return None


class Imports(frozenset):
    """The names a notebook's imports bind (a ``frozenset`` of them), with the lab's :class:`Policy`."""

    policy: Policy


def _allowed_private(name: str) -> bool:
    return any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in ALLOWED_PRIVATE)


@functools.lru_cache(maxsize=4096)
def _resolved(path: str, trusted: bool = False, imports: bool = False) -> Any:
    """The object at the dotted ``path`` (a module, or a member of one), or ``_MISSING``. Only modules under
    :data:`ALLOWED_ROOTS` are imported for a path a submission wrote (``trusted``: the lab's own code).
    ``imports``: as an ``import`` statement reads it (a submodule before an attribute of the same name:
    ``torch.autograd.gradcheck`` the module, not the function)."""
    root, *rest = path.split(".")
    if not trusted and root not in ALLOWED_ROOTS:
        return _MISSING
    try:
        obj: Any = importlib.import_module(root)
    except Exception:  # noqa: BLE001 - a module that does not import is not there
        return _MISSING
    for index, name in enumerate(rest):
        step = ".".join([root, *rest[: index + 1]])
        if not trusted and _outside_api(step):
            return _MISSING
        module = sys.modules.get(step) if imports else None
        if isinstance(module, types.ModuleType):
            obj = module
            continue
        try:
            obj = getattr(obj, name)
        except AttributeError:
            if not trusted and root not in sys.stdlib_module_names and step not in _loaded_by_import(root):
                return _MISSING
            try:  # a submodule not yet imported by its parent
                obj = importlib.import_module(step)
            except Exception:  # noqa: BLE001 - not there
                return _MISSING
        except Exception:  # noqa: BLE001 - a lazy attribute that fails to load is not there
            return _MISSING
    return obj


@functools.cache
def _loaded_by_import(root: str) -> frozenset[str]:
    """The modules ``import root`` loads (``torch.nn``, not ``torch.backends.xeon.run_cpu``), found once in
    a fresh interpreter, so that what this process happens to have imported never changes a verdict."""
    script = (
        "import importlib, sys; importlib.import_module(sys.argv[1]); "
        "print(*(m for m in list(sys.modules) if m == sys.argv[1] or m.startswith(sys.argv[1] + '.')))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
    found = subprocess.run(
        [sys.executable, "-c", script, root], capture_output=True, text=True, env=env, timeout=300, check=True
    )
    return frozenset(found.stdout.split())


def _outside_api(path: str) -> bool:
    """Whether the submodule at ``path`` is one its package does not hand out: ``import root`` does not load
    it and its parent has no lazy ``__getattr__`` (numpy's ``random``). Such modules are tools and
    launchers (``torch.backends.xeon.run_cpu`` starts processes, ``torch.utils.hipify`` rewrites files):
    graded code names them only where the lab's own code does, and the grader never imports one to vet a cell.
    The standard library is not read this way: its packages load their API on demand (``collections.abc``),
    and which of its modules graded code may use is :data:`ALLOWED_ROOTS`' list."""
    root, _, _ = path.partition(".")
    if root in sys.stdlib_module_names:
        return False
    parent = sys.modules.get(path.rpartition(".")[0])
    return (
        bool(parent)
        and "__getattr__" not in vars(parent)
        and path not in _loaded_by_import(root)
        and _is_module(path)
    )


def _origin(obj: Any) -> str:
    """The module that defines ``obj`` (a function's, class's or bound method's; an instance's type's)."""
    module = getattr(obj, "__module__", None)
    if isinstance(module, str):
        return module
    holder = getattr(obj, "__self__", None)
    if isinstance(holder, types.ModuleType):
        return holder.__name__
    return type(holder if holder is not None else obj).__module__


_USED = object()  # a member the lab's own code uses, not looked at further


def _used_value(path: str) -> Any:
    """What ``path``, which the lab's own code uses, holds, as far as the checks need it: the value when its
    module is loaded, a module (a stand-in when not loaded) or :data:`_USED`. Never imports a module the lab
    names (``torch._dynamo``, ``torch.onnx``: seconds each) just to vet a cell."""
    parent, _, name = path.rpartition(".")
    members = vars(sys.modules[parent]) if parent in sys.modules else {}
    if name in members:
        return members[name]
    if _is_module(path, trusted=True):
        return sys.modules.get(path) or types.ModuleType(path)
    return _USED


_DATA_TYPES = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset)


def _step(policy: Policy, path: str, name: str, imports: bool = False) -> tuple[Any, str | None]:
    """The member ``name`` of the module at ``path`` and why graded code may not use it (None: it may);
    ``imports``: as an ``import`` statement reads it."""
    full = f"{path}.{name}"
    used = policy.uses(full)
    if used:
        return _used_value(full), None
    why = _not_public(policy, path, name)
    if why:
        return _MISSING, why
    value = _resolved(full, False, imports)
    if value is _MISSING and _outside_api(full):
        return _MISSING, (
            f"'{full}' (a module that `import {full.partition('.')[0]}` does not load; tools and "
            "launchers are such modules: graded code may use it only where the lab's own code does)"
        )
    if value is _MISSING:
        return value, f"'{full}', which is not part of '{path}'"
    if isinstance(value, types.ModuleType):
        if getattr(value, "__name__", None) != full:
            return _MISSING, f"'{full}' (the module '{getattr(value, '__name__', '?')}' under another name)"
        return value, None
    if id(value) in policy.denied_objects:
        return (
            _MISSING,
            f"'{full}' (it is '{policy.denied_objects[id(value)]}', not allowed in graded code of this lab)",
        )
    origin = (
        ""
        if isinstance(value, _DATA_TYPES)
        else _origin(value)
        if callable(value)
        else type(value).__module__
    )
    top = origin.split(".")[0].lstrip("_")
    builtin_name = getattr(value, "__name__", "")
    if (
        top == "builtins"
        and callable(value)
        and not (getattr(builtins, builtin_name, None) is value and builtin_name in ALLOWED_BUILTINS)
    ):
        return _MISSING, f"'{full}' (it is the builtin '{getattr(value, '__name__', name)}')"
    if origin and top not in ALLOWED_ROOTS and top != "builtins":
        return (
            _MISSING,
            f"'{full}' (it is '{origin}.{getattr(value, '__name__', name)}', of a module graded code may not use)",
        )
    if origin and policy.denied(origin):
        return _MISSING, f"'{full}' (defined in '{origin}', which is not allowed in graded code of this lab)"
    return value, None


def _not_public(policy: Policy, path: str, name: str) -> str | None:
    """Why ``path.name``, which the lab's own code does not use, is not for graded code (None: it may be)."""
    full = f"{path}.{name}"
    if name.startswith("_") and full not in PRIVATE_MEMBERS and not _allowed_private(name):
        return f"the private name '{full}'"
    if any(part.startswith("_") for part in path.split(".")) and full not in PRIVATE_MEMBERS:
        return f"'{full}' (of the private module '{path}', only what the lab itself uses)"
    root = path.split(".")[0]
    if root not in ALLOWED_ROOTS:
        return f"'{full}' (of '{root}', only what the lab itself uses)"
    denied = policy.denied(full)
    if denied:
        return f"'{full}' ('{denied}' is not allowed in graded code of this lab)"
    if (
        name in DENIED_ATTRIBUTES and name not in policy.attributes and full not in PLAIN_MEMBERS
    ):  # ``torch.ops.load_library`` in lab 05 too
        return f"'{full}' (the attribute '.{name}')"
    if path == "inspect" and name not in INSPECT_TEXT:
        return f"'{full}' (of inspect, only {', '.join(sorted(INSPECT_TEXT))})"
    return None


def module_path_allowed(policy: Policy, module: str) -> str | None:
    """Why ``import module`` is refused (None: it may be imported)."""
    root, *rest = module.split(".")
    if (root not in ALLOWED_ROOTS and not policy.uses(root)) or root.startswith("_"):
        return (
            f"importing '{module}' (graded code may import torch, numpy, math, labutils and the standard "
            "library's computation modules)"
        )
    path = root
    for name in rest:
        value, why = _step(policy, path, name, imports=True)
        if why:
            return why
        if not isinstance(value, types.ModuleType):
            return f"importing '{module}' ('{path}.{name}' is not a module)"
        path = f"{path}.{name}"
    return None


class _Policy(ast.NodeVisitor):
    """Collects every :class:`Finding` of one cell's syntax tree."""

    def __init__(self, policy: Policy, tree: ast.Module) -> None:
        self.policy = policy
        self.findings: list[Finding] = []
        self.modules: dict[str, str] = {
            **policy.modules,
            **_module_bindings(tree, policy.modules),
        }  # name -> path
        self.library: set[str] = set()  # names the cell binds to a library's objects (``T = torch.Tensor``)
        self.bound = _bound_names(tree)
        self.aliases: set[int] = set()  # ids of ``Name = <module chain>`` statements' values
        self.code_reads: set[int] = (
            set()
        )  # ids of ``f.__code__`` read for a ``co_`` fact (``co_firstlineno``)
        self.type_reads: set[int] = set()
        self.docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }  # ids of ``type(x)`` calls read for a name or compared, and their ``type``

    def refuse(self, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(getattr(node, "lineno", 1), what))

    # -- identifiers -------------------------------------------------------------------------------
    def check_identifier(self, node: ast.AST, name: str | None, what: str = "name") -> None:
        if not name:
            return
        if name.startswith("__") and not _allowed_private(name):
            self.refuse(node, f"the {what} '{name}'")
        elif name.startswith("_") and name not in self.bound and not _allowed_private(name):
            self.refuse(node, f"the {what} '{name}' (a private name the cell does not define)")

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name == "type" and id(node) not in self.type_reads:
            self.refuse(node, "'type' other than called as 'type(x)'")
        if name in DENIED_NAMES or (
            hasattr(builtins, name) and name not in ALLOWED_BUILTINS and not name.startswith("_")
        ):
            self.refuse(node, f"'{name}'")
        elif name in ("_ih", "_oh", "_dh", "_i", "_ii", "_iii", "__", "___"):
            self.refuse(node, f"the notebook history '{name}'")
        else:
            self.check_identifier(node, name)
        if name in self.modules:
            if isinstance(node.ctx, ast.Load):
                self.refuse(
                    node,
                    f"the module '{name}' as a value (a module may only be imported and used "
                    "as 'module.name')",
                )
            elif id(node) not in self.aliases:
                self.refuse(node, f"rebinding the module name '{name}'")

    def visit_arg(self, node: ast.arg) -> None:
        self.check_identifier(node, node.arg, "parameter")
        if node.arg in self.modules:
            self.refuse(node, f"rebinding the module name '{node.arg}'")
        if node.annotation is not None:
            self.annotation(node.annotation)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None and node.arg.startswith("__"):
            self.refuse(node.value, f"the keyword '{node.arg}'")
        if node.arg in UNSAFE_KEYWORDS and not (
            isinstance(node.value, ast.Constant) and node.value.value is not UNSAFE_KEYWORDS[node.arg]
        ):
            self.refuse(node.value, f"'{node.arg}=' other than {not UNSAFE_KEYWORDS[node.arg]} (loads code)")
        self.visit(node.value)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            self.check_identifier(node, name)
            if name in self.modules:
                self.refuse(node, f"rebinding the module name '{name}'")

    visit_Nonlocal = visit_Global

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self.check_identifier(node, node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self.check_identifier(node, node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self.check_identifier(node, node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.check_identifier(node, node.rest)
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        for name in node.kwd_attrs:  # ``case object(__globals__=g)``: an attribute read by name
            self.attribute_name(node, name)
            if name in ("format", "__code__"):  # ``case str(format=fmt)``: no literal to check the fields of
                self.refuse(node, f"reading '.{name}' in a class pattern")
        if node.patterns:  # ``case C(v)`` reads the attribute C.__match_args__ names, which code may have set
            self.refuse(node, "a positional class pattern (it reads attributes named by __match_args__)")
        self.generic_visit(node)

    # -- definitions ---------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name.startswith("__") and node.name not in ALLOWED_DUNDER_METHODS:
            self.refuse(node, f"defining '{node.name}'")
        elif not node.name.startswith("__"):
            self.check_identifier(node, node.name)
        if node.returns is not None:
            self.annotation(node.returns)
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.defaults(node.args)
        with self.scope(node):
            self.parameters(node.args)
            for statement in node.body:
                self.visit(statement)

    visit_AsyncFunctionDef = visit_FunctionDef

    @contextlib.contextmanager
    def scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> Iterator[None]:
        """Inside a function, a name it binds itself (a parameter, a local) is not the notebook's module of
        that name: ``strides = list(t.stride())`` in a lab that imports ``labutils.strides``."""
        shadowed = {name: self.modules.pop(name) for name in _local_names(node) if name in self.modules}
        try:
            yield
        finally:
            self.modules.update(shadowed)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.defaults(node.args)
        with self.scope(node):
            self.parameters(node.args)
            self.visit(node.body)

    def parameters(self, node: ast.arguments) -> None:
        for arg in (*node.posonlyargs, *node.args, node.vararg, *node.kwonlyargs, node.kwarg):
            if arg is not None:
                self.visit_arg(arg)

    def defaults(self, node: ast.arguments) -> None:
        """A function's defaults, read where the function is defined (outside its own names)."""
        for default in (*node.defaults, *node.kw_defaults):
            if default is not None:
                self.visit(default)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.check_identifier(node, node.name)
        if any(k.arg == "metaclass" for k in node.keywords):
            self.refuse(node, "a metaclass")
        for child in (*node.decorator_list, *node.bases, *node.keywords, *node.body):
            self.visit(child)

    def annotation(self, node: ast.expr) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.JoinedStr, ast.Constant)) and isinstance(getattr(sub, "value", ""), str):
                self.refuse(sub, "a string annotation (it would be evaluated as code)")
                return
        self.visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.annotation(node.annotation)
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    # -- imports -------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            why = module_path_allowed(self.policy, alias.name)
            if why:
                self.refuse(node, why)
            self.check_identifier(node, alias.asname)
            bound = alias.asname or alias.name.split(".")[0]
            self.modules[bound] = alias.name if alias.asname else bound

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.refuse(node, "a relative import")
            return
        why = module_path_allowed(self.policy, module)
        if why:
            self.refuse(node, why)
            return
        for alias in node.names:
            if alias.name == "*":
                self.refuse(node, f"'from {module} import *'")
                continue
            value, why = _step(self.policy, module, alias.name, imports=True)
            if why:
                self.refuse(node, f"importing {why}")
            self.check_identifier(node, alias.asname)
            bound = alias.asname or alias.name
            if isinstance(value, types.ModuleType):
                self.modules[bound] = f"{module}.{alias.name}"
            else:
                self.library.add(bound)

    # -- attributes ----------------------------------------------------------------------------------
    def attribute_name(self, node: ast.AST, name: str) -> None:
        if name.startswith("_") and not _allowed_private(name):
            self.refuse(node, f"the private attribute '.{name}'")
        elif name in DENIED_ATTRIBUTES and name not in self.policy.attributes:
            self.refuse(node, f"the attribute '.{name}'")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain, base = _chain(node)
        if isinstance(base, ast.Name) and base.id in self.modules:
            self.module_chain(node, self.modules[base.id], chain)
            return
        if isinstance(base, ast.Name) and base.id in self.library and not isinstance(node.ctx, ast.Load):
            self.refuse(node, f"changing '.{node.attr}' of a library's object ('{base.id}')")
        self.attribute_name(node, node.attr)
        if not isinstance(node.ctx, ast.Load) and node.attr.startswith("__"):
            self.refuse(node, f"changing the dunder attribute '.{node.attr}'")
        if (
            node.attr in CODE_FACTS
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "__code__"
        ):
            self.code_reads.add(id(node.value))
        if node.attr == "__code__" and id(node) not in self.code_reads:
            self.refuse(
                node,
                f"'.__code__' other than for one of {', '.join(sorted(CODE_FACTS))} (a code object "
                "can be rebuilt into a function)",
            )
        if node.attr in ("__name__", "__qualname__") and _is_type_call(node.value):
            self.type_reads.add(id(node.value))
        if node.attr == "format" and not (
            isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        ):
            self.refuse(node, "'.format' of a string built at run time (format fields reach into attributes)")
        self.visit(node.value)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self.library_value(node.value) and any(
            isinstance(n, ast.Constant) and isinstance(n.value, str) for n in ast.walk(node.slice)
        ):
            self.refuse(
                node,
                "a string in a library object's subscript (typing makes 'Optional[\"T\"]' a forward "
                "reference: code it may evaluate)",
            )
        self.generic_visit(node)

    def library_value(self, node: ast.AST) -> bool:
        """Whether ``node`` is a library's object: a name the cell bound to one, or ``module.attr...``."""
        _, base = _chain(node) if isinstance(node, ast.Attribute) else ([], node)
        return isinstance(base, ast.Name) and (
            base.id in self.library or (base.id in self.modules and isinstance(node, ast.Attribute))
        )

    def module_chain(self, node: ast.Attribute, path: str, chain: list[ast.Attribute]) -> None:
        """``module.a.b...``: each step resolved on the real module while it is one; a module at the end of
        the chain, or a store into one, is refused."""
        value: Any = _used_value(path) if self.policy.uses(path) else _resolved(path)
        for index, link in enumerate(chain):
            if not isinstance(value, types.ModuleType):
                for rest in chain[index:]:
                    self.attribute_name(rest, rest.attr)
                if not isinstance(node.ctx, ast.Load):
                    self.refuse(node, f"changing '.{node.attr}' of a library's object ('{path}')")
                return
            value, why = _step(self.policy, path, link.attr)
            if why:
                self.refuse(link, why)
                return
            path = f"{path}.{link.attr}"
        if not isinstance(node.ctx, ast.Load):
            self.refuse(node, f"changing '{path}'")
        elif isinstance(value, types.ModuleType) and id(node) not in self.aliases:
            self.refuse(node, f"the module '{path}' as a value (a module may only be used as 'module.name')")

    # -- statements and expressions ------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and isinstance(node.value, ast.Attribute):
            chain, base = _chain(node.value)
            if isinstance(base, ast.Name) and base.id in self.modules:
                resolved = self.static_value(base.id, chain)
                if isinstance(resolved, types.ModuleType):  # ``F = torch.nn.functional``: an alias
                    self.aliases.update({id(node.value), id(target)})
                    self.modules[target.id] = resolved.__name__
                else:  # ``T = torch.Tensor``: ``T.t = ...`` would change the library
                    self.library.add(target.id)
        self.generic_visit(node)

    def static_value(self, name: str, chain: list[ast.Attribute]) -> Any:
        path = self.modules[name]
        for link in chain:
            value, why = _step(self.policy, path, link.attr)
            if why or not isinstance(value, types.ModuleType):
                return value
            path = f"{path}.{link.attr}"
        return _used_value(path) if self.policy.uses(path) else _resolved(path)

    def visit_Call(self, node: ast.Call) -> None:
        if _is_type_call(node):
            self.type_reads.add(id(node.func))
            if id(node) not in self.type_reads:
                self.refuse(
                    node,
                    "'type(x)' other than 'type(x).__name__' or in a comparison (a class taken from "
                    "a value can make classes: type(type(x))('C', (), {...}))",
                )
        elif isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass"):
            self.type_reads.update(id(arg) for arg in node.args[1:] if _is_type_call(arg))
        elif (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "type"
            and (node.args or node.keywords)
            and not (len(node.args) == 1 and not node.keywords and self.names_a_module_member(node.args[0]))
        ):
            self.refuse(
                node,
                "'.type(...)' of anything but a type named through its module ('.type(torch.float64)'; a "
                "storage's .type('a.b') imports what the string names)",
            )
        self.generic_visit(node)

    def names_a_module_member(self, node: ast.AST) -> bool:
        """``module.name...``: an attribute chain on a name bound to a module."""
        if not isinstance(node, ast.Attribute):
            return False
        _, base = _chain(node)
        return isinstance(base, ast.Name) and base.id in self.modules

    def visit_Compare(self, node: ast.Compare) -> None:
        if all(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            self.type_reads.update(id(side) for side in (node.left, *node.comparators) if _is_type_call(side))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if (
            id(node) in self.docstrings
        ):  # text for the reader (``f.__doc__`` reaches no sink that follows names)
            return
        if isinstance(node.value, str) and _DUNDER_TEXT.search(node.value):
            self.refuse(node, "a string that names a dunder")
        elif isinstance(node.value, str) and "{" in node.value and _reaches_into(node.value):
            self.refuse(node, "a format string that reaches into attributes or items ('{x.attr}', '{x[k]}')")


def _is_type_call(node: ast.AST) -> bool:
    """``type(x)``: one argument, no keywords."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
        and not node.keywords
    )


def _chain(node: ast.Attribute) -> tuple[list[ast.Attribute], ast.expr]:
    """``a.b.c`` as its attribute nodes, innermost first, and its base (``a``)."""
    chain = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        chain.append(current)
        current = current.value
    return chain[::-1], current


def _reaches_into(text: str) -> bool:
    """Whether ``text`` has a replacement field that follows an attribute or an index (``str.format``'s own
    reflection: ``"{0.__globals__}"``)."""
    return any(
        re.fullmatch(r"\w*([.\[].*)", f.split("!")[0].split(":")[0])
        for f in re.findall(r"(?<!\{)\{([^{}]+)\}", text)
    )


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the cell binds (assigned, defined, a parameter, a loop or ``except`` target, a capture)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(a.asname or a.name.split(".")[0] for a in node.names)
    return found


def _local_names(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names ``function`` binds in its own scope (parameters, assignments, loop targets, nested
    definitions), less those it declares ``global`` or ``nonlocal`` and those it imports (still modules)."""
    args = function.args
    found = {a.arg for a in (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg) if a}
    declared: set[str] = set()
    todo: list[ast.AST] = list(function.body) if isinstance(function.body, list) else [function.body]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
            todo.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            declared.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            found.add(node.name)
        todo.extend(ast.iter_child_nodes(node))
    return found - declared


def _parsed(source: str) -> ast.Module | None:
    """The shared tree of a cell (:func:`graders.grader.parsing.read_cell`); None when it was refused unparsed."""
    tree = read_cell(source)
    return tree if isinstance(tree, ast.Module) else None


def vet(cell_source: str, module_names: Iterable[str] = ()) -> list[Finding]:
    """Every place ``cell_source`` breaks the policy for graded code (empty: it may run).

    ``module_names``: what :func:`imported_names` returned for the lab's source (its names and policy), or
    just the names the notebook binds to modules elsewhere (``torch``, ``F``, ``dist``: resolved by
    :data:`KNOWN_ALIASES`, with the default policy). A cell over the bounds of :func:`graders.grader.parsing.read_cell`,
    not plain Python (a magic, a shell escape, a syntax error) or nested too deeply to check is refused.
    """
    policy = (
        module_names.policy
        if isinstance(module_names, Imports)
        else Policy({name: KNOWN_ALIASES.get(name, name) for name in module_names})
    )
    tree = read_cell(cell_source)
    if isinstance(tree, Unread):
        return [Finding(tree.line, tree.what)]
    count = 0
    for node in ast.walk(tree):
        count += len(node.names) if isinstance(node, (ast.Import, ast.ImportFrom)) else 0
        if count > MAX_IMPORTS:
            return [
                Finding(
                    getattr(node, "lineno", 1),
                    f"more than {MAX_IMPORTS} imports in one cell (each loads "
                    "modules into the grader to check it)",
                )
            ]
    checker = _Policy(policy, tree)
    try:
        checker.visit(tree)
    except RecursionError:
        return [Finding(1, "code nested too deeply to check")]
    return sorted(set(checker.findings), key=lambda f: (f.line, f.what))


@functools.lru_cache(maxsize=64)
def imported_names(sources: tuple[str, ...]) -> Imports:
    """The names that the ``import`` statements (and module aliases) of ``sources`` bind (``torch``, ``F``,
    ``np``), with the lab's :class:`Policy`: what the lab's own code (``sources``: its setup cells, lessons
    and reference solutions) uses is allowed in its graded code, :data:`DENIED` or not, and nothing more
    of the modules outside :data:`ALLOWED_ROOTS`. Cached: a batch asks once per submission."""
    trees = [tree for tree in map(_parsed, sources) if tree is not None]
    modules: dict[str, str] = {}
    for tree in trees:
        modules.update(_module_bindings(tree, modules, trusted=True))
    uses = frozenset(path for tree in trees for path in _used_paths(tree, modules))
    attributes = frozenset(n.attr for tree in trees for n in ast.walk(tree) if isinstance(n, ast.Attribute))
    found = Imports(modules)
    found.policy = Policy(modules, uses, attributes)
    return found


@functools.lru_cache(maxsize=1024)
def _is_module(path: str, trusted: bool = False) -> bool:
    """Whether ``path`` names a module, found without running it or its package (``from labutils import
    digits`` binds a module: the grader need not import scikit-learn, nor ``torch._dynamo``, to know)."""
    if path in sys.modules:
        return isinstance(sys.modules[path], types.ModuleType)
    if not trusted and path.split(".")[0] not in ALLOWED_ROOTS:
        return False
    try:
        parent = path.rpartition(".")[0]
        if not parent:
            return importlib.util.find_spec(path) is not None
        where = _locations(parent)
        return bool(where) and importlib.machinery.PathFinder.find_spec(path, where) is not None
    except (ImportError, ValueError, AttributeError):
        return False


@functools.lru_cache(maxsize=1024)
def _locations(package: str) -> list[str] | None:
    """Where the package ``package`` keeps its submodules (None: not a package), without importing it."""
    module = sys.modules.get(package)
    if module is not None:
        return list(getattr(module, "__path__", None) or []) or None
    parent = package.rpartition(".")[0]
    if parent:
        where = _locations(parent)
        spec = importlib.machinery.PathFinder.find_spec(package, where) if where else None
    else:
        spec = importlib.util.find_spec(package)
    return list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else None


def _module_bindings(tree: ast.Module, known: Mapping[str, str], trusted: bool = False) -> dict[str, str]:
    """Names ``tree`` binds to modules: by ``import`` and by ``name = <module chain>`` (only the names,
    nothing is checked here; ``trusted``: the lab's own code, whose imports may be of any module)."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*" and _is_module(f"{node.module}.{alias.name}", trusted):
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    names = {**known, **found}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Attribute)
        ):
            chain, base = _chain(node.value)
            if isinstance(base, ast.Name) and base.id in names:
                path = ".".join([names[base.id], *(link.attr for link in chain)])
                if isinstance(_resolved(path, trusted), types.ModuleType):
                    found[node.targets[0].id] = path
    return found


def _used_paths(tree: ast.Module, modules: Mapping[str, str]) -> Iterator[str]:
    """The dotted paths ``tree`` names: imports and attribute chains on module names (trusted code)."""
    local = {**modules, **_module_bindings(tree, modules, trusted=True)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Attribute):
            chain, base = _chain(node)
            if isinstance(base, ast.Name) and base.id in local:
                yield ".".join([local[base.id], *(link.attr for link in chain)])


# -- stated rules ------------------------------------------------------------------------------------


def _top_level_names(statement: ast.stmt) -> set[str]:
    """The names a top-level statement binds in the notebook: a function's or class's own, and the names its
    code declares ``global`` (``def bind(): global helper; helper = torch.broadcast_shapes``)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name} | {
            name for node in ast.walk(statement) if isinstance(node, ast.Global) for name in node.names
        }
    if isinstance(statement, (ast.Import, ast.ImportFrom)):  # ``import numpy as xp`` defines ``xp``
        return {alias.asname or alias.name.split(".")[0] for alias in statement.names}
    return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _walk_code(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` without annotations (a type hint names ``torch.Tensor`` but runs nothing of it), in
    a loop rather than by recursion (a deep tree costs no stack)."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        for name, value in ast.iter_fields(current):
            if name in ("annotation", "returns"):
                continue
            if isinstance(value, list):
                todo.extend(child for child in reversed(value) if isinstance(child, ast.AST))
            elif isinstance(value, ast.AST):
                todo.append(value)


@functools.lru_cache(maxsize=4096)
def _mentioned_cached(node: ast.AST) -> tuple[tuple[str, int], ...]:
    found: dict[str, int] = {}
    for sub in _walk_code(node):
        names = (
            [sub.id, *KNOWN_ALIASES.get(sub.id, "").split(".")]
            if isinstance(sub, ast.Name)
            else [sub.attr, "." + sub.attr]
            if isinstance(sub, ast.Attribute)
            else []
        )
        if isinstance(sub, ast.MatchClass):  # ``case torch.Tensor(mT=m)`` reads the attribute mT
            names = [name for attr in sub.kwd_attrs for name in (attr, "." + attr)]
        if isinstance(sub, (ast.Import, ast.ImportFrom)):
            names = [part for a in sub.names for part in (*a.name.split("."), a.asname or "")]
            names += (sub.module or "").split(".") if isinstance(sub, ast.ImportFrom) else []
        for name in filter(None, names):
            found.setdefault(name, getattr(sub, "lineno", 1))
    return tuple(found.items())


def _mentioned(node: ast.AST) -> dict[str, int]:
    """Every identifier ``node`` mentions and its first line: ``name`` for names and imported names,
    ``.name`` for attributes (so a rule can forbid ``.t`` without forbidding a variable ``t``); a notebook's
    usual module names mention their modules too (``F``: ``torch``, ``nn``, ``functional``)."""
    return dict(_mentioned_cached(node))


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
    """``starts`` and every top-level statement they use, by name, to any depth (each once, in order).
    Each name is followed once: linear in the cells' size, however many statements bind the same name."""
    todo, seen, followed, found = list(reversed(starts)), set(), set(), []
    while todo:
        cell, statement = todo.pop()
        if id(statement) in seen:
            continue
        seen.add(id(statement))
        found.append((cell, statement))
        fresh = [name for name in _mentioned(statement) if name not in followed]
        followed.update(fresh)
        todo += reversed([d for name in fresh for d in definitions.get(name, [])])
    return found


def _recursion(reached: list[tuple[str, ast.stmt]], definitions: Uses, exercise: str) -> list[Finding]:
    """Functions among ``reached`` that call themselves, directly or through others (nested ones directly):
    the strongly connected parts of the graph of statements and the names they mention and bind (Tarjan's,
    without recursion; through the names, its edges are as many as the mentions)."""
    index_of = {id(s): i for i, (_, s) in enumerate(reached)}
    names: dict[str, int] = {}  # a name's node in the graph, after the statements' nodes
    edges: list[list[int]] = [
        [names.setdefault(n, len(reached) + len(names)) for n in _mentioned(s)] for _, s in reached
    ]  # statement -> the names it mentions
    edges += [[] for _ in names]
    for name, node in names.items():  # name -> the reached statements that bind it
        edges[node] = [index_of[id(d)] for _, d in definitions.get(name, []) if id(d) in index_of]
    cyclic = _in_cycles(edges)
    found = []
    for i, (cell, statement) in enumerate(reached):
        where = "" if cell == exercise else f" (in '{cell}', which it uses)"
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and i in cyclic:
            found.append(Finding(statement.lineno, f"'{statement.name}' calls itself{where}"))
        for nested in _walk_code(statement):
            if (
                nested is not statement
                and isinstance(nested, (ast.FunctionDef, ast.AsyncFunctionDef))
                and any(isinstance(n, ast.Name) and n.id == nested.name for n in _walk_code(nested))
            ):
                found.append(Finding(nested.lineno, f"'{nested.name}' calls itself{where}"))
    return found


def _in_cycles(edges: list[list[int]]) -> set[int]:
    """The nodes of ``edges`` (node -> successors) that lie on a cycle: Tarjan's algorithm, iteratively."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    cyclic: set[int] = set()
    counter = 0
    for root in range(len(edges)):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            if position < len(edges[node]):
                work.append((node, position + 1))
                nxt = edges[node][position]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cyclic.update(component)
    return cyclic


def stated_rule_breaks(
    solutions: dict[str, str], exercise: str, names: Iterable[str] = (), iterative: bool = False
) -> list[Finding]:
    """Where the solution cell ``exercise``, or code of other solution cells it uses, mentions one of ``names``
    (``"transpose"``: any name, attribute or import of it; ``".t"``: only an attribute), and, when it must be
    ``iterative``, where a function of it calls itself.

    ``solutions``: solution grade_id -> source. What the exercise's cell uses is followed through the
    top-level functions, classes and assignments of every solution cell, by name, to any depth. Linear in
    the cells' size.
    """
    forbidden, definitions = set(names), _definitions(solutions)
    start = _parsed(solutions.get(exercise, ""))
    reached = _reachable([(exercise, s) for s in (start.body if start else [])], definitions)
    findings = []
    for cell, statement in reached:
        where = "" if cell == exercise else f" (in '{cell}', which it uses)"
        findings += [
            Finding(line, f"mentions '{name.lstrip('.')}', which this exercise forbids{where}")
            for name, line in _mentioned(statement).items()
            if name in forbidden
        ]
    if iterative:
        findings += _recursion(reached, definitions, exercise)
    return sorted(set(findings), key=lambda f: (f.line, f.what))
