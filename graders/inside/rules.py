"""Stated rules, checked where the code runs: which operations a submission's function executed.

A lab says "build it with ``torch.as_strided`` only", "do not call ``torch.broadcast_shapes``",
"no collective, only send/recv". Swapping ``torch.transpose`` for a function that raises misses
``t.mT``, ``torch.ops.aten.transpose.int`` or ``import torch as T; T.swapaxes``. A probe instead runs
the student's function inside :func:`forbidden` and returns what it saw with its observation::

    with forbidden(aten=["aten.transpose", "aten.permute"], calls=[torch.broadcast_shapes]) as seen:
        got = ns["transpose_view"](t, 0, 1)
    return {"values": got, "violations": seen.violations}

The reference obeys the rules and sees ``[]``; a submission that breaks one differs from it and loses
the cell's points. Three recorders run while the window is open:

* a :class:`~torch.utils._python_dispatch.TorchDispatchMode` sees every operator that executes, at
  the ATen level (``aten.transpose.int`` however it was spelled: ``t.mT``, ``t.swapaxes``, ``torch.ops``;
  composite ops such as ``movedim`` or ``.T`` arrive as the ``permute``/``transpose`` they become) and
  the ``c10d`` ops behind every ``torch.distributed`` collective (``c10d.allreduce_.default`` ...),
  whichever Python function or ProcessGroup method issued it;
* a profile hook (``sys.setprofile`` / ``threading.setprofile``) sees each Python function that starts
  (matched by its code object, so any alias, ``getattr`` spelling or re-wrapped copy of the function is
  the same) and each builtin called from Python (matched by identity, or by class and name for methods
  of C types);
* the same hook reports tampering (the hook or the mode removed, the Python dispatch key excluded)
  and escapes (threads or processes started, where neither recorder follows).

Violations are sorted, de-duplicated names: deterministic, so reference and submission compare.
What stays out of reach, in-process: a builtin called *from C* (``map(torch.from_numpy, ...)``,
``functools.partial``) is not a profile event, and work handed to a thread that was already running
before the window opened is seen by neither recorder. Probes back these up with behaviour (is the
result a view, which autograd node made it). The block's :class:`Seen` is filled only when the window
closes, so clearing it from inside (up the stack, in the probe's locals) changes nothing, and the ways to
the recorders themselves (``sys.getprofile``, ``gc.get_objects``, the dispatch mode stack) are reported
as tampering; but code that walks ``gc`` can still find and edit their records after that report.
"""

from __future__ import annotations

import _thread
import contextlib
import gc
import os
import sys
import sysconfig
import threading
import types
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

__all__ = [
    "COLLECTIVES",
    "COLLECTIVE_METHODS",
    "POINT_TO_POINT",
    "Seen",
    "autograd_nodes",
    "collective_methods",
    "forbidden",
    "methods",
]

#: Every op of these namespaces is a collective or part of one (``c10d.allreduce_``, functional
#: collectives ...), except the point-to-point ops in :data:`POINT_TO_POINT`.
COLLECTIVES = ("c10d.*", "_c10d_functional.*", "c10d_functional.*", "_c10d_functional_autograd.*")
#: ``dist.send`` / ``recv`` / ``isend`` / ``irecv`` / ``batch_isend_irecv`` and ProcessGroup.send/recv.
POINT_TO_POINT = ("c10d.send", "c10d.recv_", "c10d.recv_any_source_")


def _own_file() -> str:
    return _own_file.__code__.co_filename


_OWN_FILE = _own_file()
_CONTEXTLIB_FILE = contextlib.contextmanager.__code__.co_filename


def _library_roots() -> tuple[str, ...]:
    """Folders of the standard library, the installed packages and the grader's own package (the contracts
    around each call of a notebook function, the probe runner): code there is not a submission's."""
    paths = sysconfig.get_paths()
    folders = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    folders += [
        os.path.dirname(os.__file__),
        os.path.dirname(os.path.dirname(torch.__file__)),
        os.path.dirname(_OWN_FILE),
    ]
    roots = {os.path.abspath(f) for f in folders} | {os.path.realpath(f) for f in folders}
    return tuple(sorted(root.rstrip(os.sep) + os.sep for root in roots))


_LIBRARY_ROOTS = _library_roots()


_GRADER_ROOT = os.path.dirname(_OWN_FILE) + os.sep


def _is_grader(filename: str) -> bool:
    """Whether ``filename`` is the grader's own package (the probe runner, the contracts), this module aside."""
    return filename.startswith(_GRADER_ROOT) and filename != _OWN_FILE


def _is_library(filename: str) -> bool:
    """Whether code compiled from ``filename`` is a library's (or this module's), not a submission's."""
    return filename.startswith(("<frozen", *_LIBRARY_ROOTS)) or filename == _OWN_FILE


def _name_of(obj: Any) -> str:
    """``module.qualname`` of a callable, class or descriptor (what a violation is called)."""
    owner = getattr(obj, "__objclass__", None)
    if owner is not None:
        return f"{owner.__module__}.{owner.__qualname__}.{obj.__name__}"
    module = getattr(obj, "__module__", None) or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    return f"{module}.{qualname}" if module else str(qualname)


def _pattern(entry: Any) -> str:
    """An op pattern as ``namespace.name[.overload]``: from a string or an ``OpOverload``/packet."""
    if isinstance(entry, str):
        return entry.replace("::", ".")
    if isinstance(entry, torch._ops.OpOverload):
        return str(entry)
    if isinstance(entry, torch._ops.OpOverloadPacket):
        return entry._qualified_op_name.replace("::", ".")
    raise TypeError(f"not an operator pattern: {entry!r}")


def _matches(op_name: str, pattern: str) -> bool:
    """``aten.transpose.int`` against ``*``, ``aten.*``, ``aten.transpose`` or ``aten.transpose.int``."""
    if pattern == "*":
        return True
    if pattern.endswith(".*"):
        return op_name.startswith(pattern[:-1])
    return op_name == pattern or op_name.startswith(pattern + ".")


@dataclass
class Seen:
    """What a :func:`forbidden` window saw; read it after the ``with`` block."""

    found: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def violations(self) -> list[str]:
        """Sorted names of the forbidden things that ran (empty when every rule was kept)."""
        return sorted(self.found)

    @property
    def ops(self) -> dict[str, int]:
        """How many times each forbidden operator (or counted callable) ran, by name, in sorted order."""
        return dict(sorted(self.counts.items()))


class _Recorder(TorchDispatchMode):
    """Notes every operator that executes and matches a forbidden pattern (and is not allowed)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No dynamo-disable wrapper around ``__torch_dispatch__``: its first call would import
        torch._dynamo and sympy (~800 modules, 2 s, 70 MiB) in every process that opens a window; a
        ``torch.compile`` inside a window still runs its operators through this mode."""
        return False

    def __init__(self, patterns: list[str], allowed: list[str], seen: Seen) -> None:
        super().__init__()
        self.patterns, self.allowed, self.seen = patterns, allowed, seen
        self.verdicts: dict[Any, str | None] = {}

    def verdict(self, func: Any) -> str | None:
        """The violation ``func`` is (its name), or None; cached per operator overload."""
        if func not in self.verdicts:
            name = str(func)
            bad = any(_matches(name, p) for p in self.patterns) and not any(
                _matches(name, p) for p in self.allowed
            )
            self.verdicts[func] = name if bad else None
        return self.verdicts[func]

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        name = self.verdict(func)
        if name is not None:
            self.seen.found.add(name)
            self.seen.counts[name] = self.seen.counts.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


def _unwrapped(fn: Any) -> tuple[Any, list[types.CodeType]]:
    """The function a decorator's wrapper runs, and the codes of the wrappers passed on the way.

    A wrapper's code is shared by every function its decorator wraps: ``@contextmanager`` gives
    ``_disable_current_modes`` and ``DistributedDataParallel.no_sync`` the same ``helper`` code, so
    forbidding it by code would forbid each of them (and entering ``model.no_sync()`` read as
    tampering). The wrapped function's own code names it alone.
    """
    wrappers: list[types.CodeType] = []
    while (
        isinstance(fn, types.FunctionType)
        and fn.__closure__
        and isinstance(fn.__code__, types.CodeType)
        and isinstance(inner := getattr(fn, "__wrapped__", None), types.FunctionType)
        and len(wrappers) < 20
    ):
        wrappers.append(fn.__code__)
        fn = inner
    return fn, wrappers


class _Calls:
    """The callables a window forbids, indexed the ways a profile event can name them."""

    def __init__(self) -> None:
        self.codes: dict[types.CodeType, str] = {}
        self.builtins: dict[int, tuple[Any, str]] = {}
        self.methods: dict[str, list[tuple[type, str]]] = {}
        self.wrappers: set[types.CodeType] = set()  # decorators' wrappers around functions in ``codes``

    def add(self, obj: Any, name: str | None = None) -> None:
        """Forbid ``obj``: a function, method, builtin, method of a C type, property or class."""
        name = name or _name_of(obj)
        if isinstance(obj, type):
            for attr in vars(obj).values():
                target = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
                if isinstance(target, property):
                    for accessor in (target.fget, target.fset, target.fdel):
                        if accessor is not None:
                            self.add(accessor, name)
                elif isinstance(target, types.FunctionType):
                    self.add(target, name)
            return
        target, wrappers = _unwrapped(getattr(obj, "__func__", obj))
        code = getattr(target, "__code__", None)
        if isinstance(code, types.CodeType):
            self.codes[code] = name
            self.wrappers.update(wrappers)
            return
        func = getattr(obj, "__func__", None)  # a pybind11 method: its builtin is what runs
        if isinstance(func, types.BuiltinFunctionType):
            obj = func
        owner = getattr(obj, "__objclass__", None)
        if isinstance(owner, type):  # a method descriptor of a C type: calls arrive bound to an instance
            self.methods.setdefault(obj.__name__, []).append((owner, name))
        self.builtins[id(obj)] = (obj, name)

    def builtin(self, fn: Any) -> str | None:
        """The forbidden name of a builtin about to be called, or None."""
        hit = self.builtins.get(id(fn))
        if hit is not None and hit[0] is fn:
            return hit[1]
        owners = self.methods.get(fn.__name__)
        if owners:
            holder = type(fn.__self__)
            for owner, name in owners:
                if issubclass(holder, owner):
                    return name
        return None


def _tamper_calls() -> _Calls:
    """Calls that switch a recorder off: named ``tampering: ...`` when a window sees one."""
    calls = _Calls()
    from torch.utils import _python_dispatch

    readers = (
        sys.getprofile,
        threading.getprofile,
        gc.get_objects,
        gc.get_referrers,
        gc.get_referents,
        _python_dispatch._get_current_dispatch_mode_stack,
        _python_dispatch._get_current_dispatch_mode,
        getattr(torch._C, "_get_dispatch_stack_at", None),
    )  # the way to a recorder, to edit what it saw
    for obj in (
        *readers,
        sys.setprofile,
        threading.setprofile,
        torch._C._pop_torch_dispatch_stack,
        getattr(torch._C, "_set_dispatch_mode", None),
        getattr(torch._C, "_unset_dispatch_mode", None),
        getattr(torch._C, "_dispatch_tls_set_dispatch_key_excluded", None),
        _python_dispatch._pop_mode,
        _python_dispatch._pop_mode_temporarily,
        _python_dispatch._disable_current_modes,
    ):
        if obj is not None:
            calls.add(obj, f"tampering: {_name_of(obj)}")
    return calls


def _escape_calls() -> _Calls:
    """Calls that run code where no recorder follows: named ``escape: ...``."""
    calls = _Calls()
    import _posixsubprocess

    for obj in (
        threading.Thread.start,
        _thread.start_new_thread,
        getattr(_thread, "start_joinable_thread", None),
        getattr(os, "fork", None),
        getattr(os, "forkpty", None),
        getattr(os, "posix_spawn", None),
        getattr(os, "posix_spawnp", None),
        getattr(_posixsubprocess, "fork_exec", None),
        os.system,
        getattr(os, "execv", None),
        getattr(os, "execve", None),
    ):
        if obj is not None:
            calls.add(obj, f"escape: {_name_of(obj)}")
    return calls


_TAMPER = _tamper_calls()
_ESCAPE = _escape_calls()


def _in_modules(module: Any, modules: tuple[str, ...]) -> bool:
    return isinstance(module, str) and any(module == m or module.startswith(m + ".") for m in modules)


def _builtin_module(fn: Any) -> Any:
    """The module a builtin belongs to: its ``__module__``, else that of what it is bound to."""
    module = fn.__module__
    if module:
        return module
    holder = fn.__self__
    if isinstance(holder, types.ModuleType):
        return holder.__name__
    return type(holder).__module__


class _CodeFacts(NamedTuple):
    """What a window needs to know of one code object, worked out the first time it runs."""

    code: types.CodeType  # held, so no other code object takes its id while the window is open
    own: bool  # this module's code (the hook and the window themselves)
    library: bool  # compiled from a library's file, not the submission's
    forbidden: tuple[str, ...]  # the forbidden calls and escapes it is
    counted: str | None
    tampering: str | None
    quiet: (
        bool  # called by a library, nothing to note: this module's code, or a library's that no table names
    )
    passes_on: bool  # contextlib's or a decorator's wrapper: it calls what its own caller asked for
    grader: (
        bool  # the grader's package (the probe runner, the contracts): it may call what a graded name holds
    )


class _Hook:
    """The profile function of one window (every thread it reaches).

    Forbidden calls and escapes count wherever they happen (a library calling ``pg.allreduce`` for the
    submission is still a collective); tampering, entries into forbidden modules and recursion count
    only when the submission's own code does them (libraries switch modes off and recurse internally).
    A tampering function is the submission's doing also when only contextlib or a decorator's wrapper
    stands between them: ``with _disable_current_modes():`` runs the generator from contextlib's
    ``__enter__``.

    It runs on every call a window makes (millions in a ``torch.onnx.export``), so what depends only
    on the code object is looked up once per code object, by id: a lookup in the tables hashes the
    whole code object, its constants included. Builtins go to the tables only when their id or name
    is in one of them.
    """

    def __init__(
        self,
        seen: Seen,
        calls: _Calls,
        counted: _Calls,
        modules: tuple[str, ...],
        recursion: bool,
        watch_dispatch: bool,
    ) -> None:
        self.seen, self.calls, self.counted, self.modules, self.recursion = (
            seen,
            calls,
            counted,
            modules,
            recursion,
        )
        self.watch_dispatch = watch_dispatch
        self.active: dict[tuple[int, types.CodeType], int] = {}
        self.acting: dict[
            types.FrameType, bool
        ] = {}  # library frames running for a graded name (see acts_for)
        self.known: dict[int, _CodeFacts] = {}
        tables = (calls, _ESCAPE, counted)
        self.builtin_ids = {key for table in tables for key in table.builtins}
        self.method_names = {name for table in tables for name in table.methods}
        self.python_key = torch._C.DispatchKey.Python
        self.excluded = torch._C._dispatch_tls_is_dispatch_key_excluded

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> None:
        try:  # the first two tests return early from most events: a library's code, called by a library
            if event == "call":
                known, caller = self.known, frame.f_back
                facts = known.get(id(frame.f_code))
                if facts is not None and facts.quiet and caller is not None:
                    caller_facts = known.get(id(caller.f_code))
                    if (
                        caller_facts is not None
                        and caller_facts.library
                        and not (self.modules and (caller_facts.grader or caller in self.acting))
                    ):
                        return
                self.on_call(frame)
            elif event == "c_call":
                if type(arg) is types.BuiltinFunctionType:
                    facts = self.known.get(id(frame.f_code))
                    if (
                        facts is not None
                        and facts.library
                        and id(arg) not in self.builtin_ids
                        and arg.__name__ not in self.method_names
                        and not (self.modules and (facts.grader or frame in self.acting))
                    ):
                        return
                    self.on_c_call(frame, arg)
            elif event == "return":
                if self.recursion:
                    self.on_return(frame)
                if self.acting:
                    self.acting.pop(frame, None)
        except Exception as err:  # noqa: BLE001 - the hook must never raise into the code it watches
            self.seen.found.add(f"recorder error: {type(err).__name__}")

    def learn(self, code: types.CodeType) -> _CodeFacts:
        """Work out and keep what this window needs to know of ``code`` (seen for the first time)."""
        forbidden = tuple(name for name in (self.calls.codes.get(code), _ESCAPE.codes.get(code)) if name)
        own, library, counted = (
            code.co_filename == _OWN_FILE,
            _is_library(code.co_filename),
            self.counted.codes.get(code),
        )
        tampering = _TAMPER.codes.get(code)
        facts = _CodeFacts(
            code,
            own,
            library,
            forbidden,
            counted,
            tampering,
            own or (library and not forbidden and counted is None and tampering is None),
            code.co_filename == _CONTEXTLIB_FILE or code in _TAMPER.wrappers,
            _is_grader(code.co_filename),
        )
        self.known[id(code)] = facts
        return facts

    def submission_checks(self) -> None:
        """Around submission code the Python dispatch key must be on (else the mode is blind)."""
        if self.watch_dispatch and self.excluded(self.python_key):
            self.seen.found.add("tampering: Python dispatch key excluded")

    def on_call(self, frame: types.FrameType) -> None:
        code, caller = frame.f_code, frame.f_back
        known = self.known
        facts = known.get(id(code)) or self.learn(code)
        caller_facts = (
            (known.get(id(caller.f_code)) or self.learn(caller.f_code)) if caller is not None else None
        )
        if facts.own or (caller_facts is not None and caller_facts.own):
            return
        if facts.forbidden:
            self.seen.found.update(facts.forbidden)
        if facts.counted is not None:
            self.seen.counts[facts.counted] = self.seen.counts.get(facts.counted, 0) + 1
        acting = (
            caller is not None and caller_facts is not None and self.acts_for(caller, caller_facts, code=code)
        )
        if acting and facts.library:
            self.acting[frame] = True
        if (caller_facts is None or caller_facts.library) and not acting:
            if facts.tampering is not None and self.asked_by_submission(caller):
                self.seen.found.add(facts.tampering)
            if self.recursion and not facts.library:
                self.enter(code)
            return
        self.submission_checks()
        if facts.tampering is not None:
            self.seen.found.add(facts.tampering)
        if self.modules:
            module = dict.get(frame.f_globals, "__name__")
            if _in_modules(module, self.modules):
                self.seen.found.add(f"{module}.{getattr(code, 'co_qualname', code.co_name)}")
        if self.recursion and not facts.library:
            self.enter(code)

    def acts_for(
        self,
        frame: types.FrameType,
        facts: _CodeFacts,
        code: types.CodeType | None = None,
        builtin: Any = None,
    ) -> bool:
        """Whether library code running in ``frame`` runs for a graded name, so that what it calls (``code``
        or ``builtin``) is the submission's doing: ``frame`` is one such already, or the grader's (the
        probe runner, the contracts) calling a library callable it was handed (an argument or a closure
        variable: ``norm = numpy.linalg.norm`` reaches the probe as ``fn``). Only for a ``modules=`` rule."""
        if frame in self.acting:
            return True
        if not (self.modules and facts.grader):
            return False
        code_of = frame.f_code
        names = code_of.co_varnames[: code_of.co_argcount + code_of.co_kwonlyargcount] + code_of.co_freevars
        values = frame.f_locals
        return any(self.hands_over(values.get(name), code, builtin) for name in names)

    def hands_over(self, value: Any, code: types.CodeType | None, builtin: Any) -> bool:
        """Whether calling ``value`` (a callable a grader frame holds) starts ``code`` or ``builtin`` directly:
        a library's Python function (by its code), a builtin (by identity), or a callable implemented in C
        (``functools.partial``, a NumPy dispatcher: what it calls is its doing)."""
        if isinstance(value, types.MethodType):
            value = value.__func__
        if isinstance(value, types.FunctionType):
            inner, _ = _unwrapped(value)
            if not isinstance(value.__code__, types.CodeType):
                return False
            facts = self.known.get(id(value.__code__)) or self.learn(value.__code__)
            return (
                facts.library
                and not facts.grader
                and not facts.own
                and code is not None
                and code in (value.__code__, getattr(inner, "__code__", None))
            )
        if value is None or isinstance(value, type):
            return False
        if isinstance(value, types.BuiltinFunctionType):
            return builtin is value
        call = getattr(type(value), "__call__", None)  # noqa: B004 - how it is called, not whether it can be
        return isinstance(call, types.WrapperDescriptorType)

    def asked_by_submission(self, frame: types.FrameType | None) -> bool:
        """Whether the first frame from ``frame`` up that is not contextlib's or a wrapper's is the
        submission's (torch entering its own ``_disable_current_modes`` is not tampering)."""
        for _ in range(50):
            if frame is None:
                return False
            facts = self.known.get(id(frame.f_code)) or self.learn(frame.f_code)
            if not facts.passes_on:
                return not facts.library and not facts.own
            frame = frame.f_back
        return False

    def enter(self, code: types.CodeType) -> None:
        """Count a submission function as running; entering it again while it runs is recursion."""
        key = (_thread.get_ident(), code)
        depth = self.active.get(key, 0)
        if depth:
            self.seen.found.add(f"recursion: {getattr(code, 'co_qualname', code.co_name)}")
        self.active[key] = depth + 1

    def on_return(self, frame: types.FrameType) -> None:
        key = (_thread.get_ident(), frame.f_code)
        depth = self.active.get(key, 0)
        if depth > 1:
            self.active[key] = depth - 1
        elif depth:
            del self.active[key]

    def on_c_call(self, frame: types.FrameType, fn: Any) -> None:
        facts = self.known.get(id(frame.f_code)) or self.learn(frame.f_code)
        if facts.own:
            return
        if id(fn) in self.builtin_ids or fn.__name__ in self.method_names:
            for table in (self.calls, _ESCAPE):
                name = table.builtin(fn)
                if name is not None:
                    self.seen.found.add(name)
            name = self.counted.builtin(fn)
            if name is not None:
                self.seen.counts[name] = self.seen.counts.get(name, 0) + 1
        if facts.library and not self.acts_for(frame, facts, builtin=fn):
            return
        self.submission_checks()
        name = _TAMPER.builtin(fn)
        if name is not None:
            self.seen.found.add(name)
        if self.modules:
            module = _builtin_module(fn)
            if _in_modules(module, self.modules):
                self.seen.found.add(f"{module}.{fn.__qualname__}")


def _table(calls: Iterable[Any] | Mapping[str, Any]) -> _Calls:
    """A :class:`_Calls` of ``calls``: callables, or a mapping of names to callables."""
    table = _Calls()
    for entry in calls.items() if isinstance(calls, Mapping) else calls:
        if isinstance(entry, tuple):
            table.add(entry[1], entry[0])
        else:
            table.add(entry)
    return table


@contextmanager
def forbidden(
    aten: Iterable[Any] = (),
    calls: Iterable[Any] | Mapping[str, Any] = (),
    modules: Iterable[str] = (),
    allow: Iterable[Any] = (),
    recursion: bool = False,
    count: Iterable[Any] | Mapping[str, Any] = (),
) -> Iterator[Seen]:
    """Record, while the block runs, the forbidden operations it executes; yields a :class:`Seen`.

    ``aten``: operator patterns, as strings (``"aten.transpose"`` any overload, ``"aten.transpose.int"``
    one overload, ``"c10d.*"`` a namespace, ``"*"`` any operator at all: "make no tensors") or as
    ``torch.ops`` objects; ``allow`` exempts patterns from them (``POINT_TO_POINT`` from ``COLLECTIVES``).
    ``calls``: functions, builtins, methods (also of C types, ``torch.Tensor.numpy``, and of pybind11
    classes, ``ProcessGroup.allreduce``) or classes (any of their methods) that must not be called; a
    mapping ``{name: callable}`` names them in ``violations``.
    ``modules``: names of packages whose functions the submission must not call (``"numpy"``; its calls
    into the package are reported, not the package's internal calls).
    ``recursion``: report a function of the submission that is entered again while it is running.
    ``count``: callables (as for ``calls``) that are allowed but counted in :attr:`Seen.ops`, like the
    forbidden operators (``{"autograd engine runs": _engine_run_backward}``: "without forming the Hessian").
    Tampering and escapes (see the module docstring) are always reported. The dispatch mode is
    installed only when there are ``aten`` patterns (``torch.export`` and ``torch.compile`` inside the
    window then run as they would without it).
    """
    seen, report = Seen(), Seen()  # the block gets ``report``, filled only when the window closes
    table, counted = _table(calls), _table(count)
    patterns = [_pattern(p) for p in aten]
    recorder = _Recorder(patterns, [_pattern(p) for p in allow], seen) if patterns else None
    hook = _Hook(seen, table, counted, tuple(modules), recursion, watch_dispatch=recorder is not None)
    previous_profile, previous_thread_profile = sys.getprofile(), threading.getprofile()
    if recorder is not None:
        recorder.__enter__()
    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        yield report
    finally:
        current = sys.getprofile()
        sys.setprofile(previous_profile)
        if current is not hook:
            seen.found.add("tampering: profile hook replaced")
        if recorder is not None:
            _close(recorder, seen)
        if threading.getprofile() is not hook:
            seen.found.add("tampering: thread profile hook replaced")
        threading.setprofile(previous_thread_profile)
        report.found, report.counts = seen.found, seen.counts


def _close(recorder: _Recorder, seen: Seen) -> None:
    """Take ``recorder`` off the dispatch mode stack, with any mode the block left above it."""
    stack = _get_current_dispatch_mode_stack()
    if not any(mode is recorder for mode in stack):
        seen.found.add("tampering: dispatch mode removed")
        return
    from torch.utils._python_dispatch import _pop_mode

    while stack and stack[-1] is not recorder:
        seen.found.add("tampering: dispatch mode left on the stack")
        _pop_mode()
        stack = _get_current_dispatch_mode_stack()
    recorder.__exit__(None, None, None)


def autograd_nodes(out: Any, inputs: Iterable[torch.Tensor], names: Iterable[str]) -> list[str]:
    """Autograd nodes named in ``names`` on the paths from ``out``'s ``grad_fn`` back to ``inputs``.

    A second opinion for view rules that no in-process recorder can be switched off for: a transpose
    leaves a ``TransposeBackward0`` in the graph however it was dispatched. Returns sorted
    ``autograd: <node>`` names (empty when ``out`` is not a tensor or has no graph).
    """
    if not isinstance(out, torch.Tensor) or out.grad_fn is None:
        return []
    wanted = set(names)
    stops = {t.grad_fn for t in inputs if isinstance(t, torch.Tensor) and t.grad_fn is not None}
    found, todo, visited = set(), [out.grad_fn], set()
    while todo:
        node = todo.pop()
        if node is None or node in visited or node in stops:
            continue
        visited.add(node)
        if type(node).__name__ in wanted:
            found.add(f"autograd: {type(node).__name__}")
        todo.extend(next_node for next_node, _ in node.next_functions if next_node is not None)
    return sorted(found)


def methods(cls: type, names: Iterable[str]) -> dict[str, Any]:
    """``{"<module>.<Class>.<name>": method}`` for those of ``names`` that ``cls`` has (for ``calls``)."""
    return {
        f"{cls.__module__}.{cls.__qualname__}.{name}": getattr(cls, name)
        for name in names
        if hasattr(cls, name)
    }


#: Methods of ``ProcessGroup`` and of its backends (``ProcessGroupGloo`` ...) that run a collective.
#: A backend's methods skip the ``c10d`` dispatcher ops, so only a call hook sees them.
COLLECTIVE_METHODS = (
    "_allgather_base",
    "_reduce_scatter_base",
    "all_gather_single",
    "all_gather_single_coalesced",
    "all_to_all_single",
    "allgather",
    "allgather_coalesced",
    "allgather_into_tensor_coalesced",
    "allreduce",
    "allreduce_coalesced",
    "alltoall",
    "alltoall_base",
    "barrier",
    "broadcast",
    "gather",
    "monitored_barrier",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_single",
    "reduce_scatter_single_coalesced",
    "reduce_scatter_tensor_coalesced",
    "scatter",
)


def collective_methods() -> dict[str, Any]:
    """The collective methods of ``ProcessGroup`` and ``Backend``, named, for ``forbidden(calls=...)``."""
    from torch._C import _distributed_c10d as c10d

    return {**methods(c10d.ProcessGroup, COLLECTIVE_METHODS), **methods(c10d.Backend, COLLECTIVE_METHODS)}
