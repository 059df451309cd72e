"""The policy for graded code (graders.grader.vetting): what a reader of the grader would write to reach the
recorders or the probes is refused by its line, and every correct solution the course knows is not."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

from graders.coursedir import nbgrader_meta
from graders.grader.cells import restore, top_level_names
from graders.grader.parsing import MAX_BRACES, MAX_CELL_BYTES, _read_within_bounds
from graders.grader.vetting import imported_names, stated_rule_breaks, vet
from tests.conftest import FIXTURES, ROOT

MODULES = {"torch", "np", "F", "nn", "dist"}
# One spelling per way in; each must be refused (the line that holds it named).
REACHES = {
    "patch the recorder module": "import graders.inside.rules as rules\nrules.forbidden = None",
    "reach it through sys.modules": "import torch\nrecorder = torch.sys.modules['graders.inside.rules']",
    "through a computed name": "probe = getattr(torch, 'sy' + 's')",
    "swap a function's code": "def scale(t, f):\n    scale.__code__ = (lambda t, f: t).__code__",
    "patch a class attribute": "T = torch.Tensor\nT.transpose = lambda *a: None",
    "walk the frames": "import inspect\nlocals_up = inspect.currentframe().f_back.f_locals",
    "frames from inspect by name": "from inspect import stack",
    "subclasses of object": "found = ().__class__.__mro__[1].__subclasses__()",
    "a thread": "import threading\nthreading.Thread(target=print).start()",
    "a process": "import os\nos.fork()",
    "the garbage collector": "import gc\nobjs = gc.get_objects()",
    "the dispatch mode stack": "from torch.utils._python_dispatch import _get_current_dispatch_mode_stack",
    "a private torch function": "torch._C._set_dispatch_mode(None)",
    "code from a string": "exec('import os')",
    "a magic": "%env X=1",
    "the IPython shell": "get_ipython().run_cell('import os')",
    "format's own reflection": "text = '{0.__globals__}'.format(scale)",
    "a pickle": "state = torch.load('x.pt', weights_only=False)",
    "a dispatch hook": "class Spy(torch.Tensor):\n    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n        pass",
    "a metaclass": "class M(type):\n    pass\nclass C(metaclass=M):\n    pass",
    "native code": "from torch.utils.cpp_extension import load_inline",
    "the builtins": "import builtins\nbuiltins.isinstance = None",
    "a module passed as self": "class Net:\n    def forward(self):\n        return self._C.DispatchKey\n"
    "Net.forward(torch)",
    "torch internals as a class's own": "class Net:\n    def __init__(self):\n        self._C = None\n"
    "    def forward(self):\n        return self._C",
    "dynamo's frame hooks": "torch._dynamo.eval_frame.set_eval_frame(None)",
    "dynamo under another name": "import torch._dynamo as d\nd.eval_frame.set_eval_frame(None)",
}


@pytest.mark.parametrize("way", sorted(REACHES))
def test_every_way_to_the_grader_is_refused_by_its_line(way: str) -> None:
    source = REACHES[way]
    findings = vet(source, MODULES)
    assert findings, f"{way}: not refused"
    assert all(1 <= f.line <= source.count("\n") + 1 for f in findings)


def _lab_imports(chapter: str) -> frozenset[str]:
    """What the grader vets a chapter's solution cells with: its lab's names and policy."""
    [lab] = (ROOT / "course" / chapter).glob("lab_*.ipynb")
    return imported_names(
        tuple(c.source for c in nbformat.read(lab, as_version=4).cells if c.cell_type == "code")
    )


def _solutions() -> list[tuple[str, str, str]]:
    found = []
    for lab in sorted((ROOT / "course").glob("*/lab_*.ipynb")):
        nb = nbformat.read(lab, as_version=4)
        found += [
            (f"{lab.name}:{nbgrader_meta(c)['grade_id']}", lab.parent.name, c.source)
            for c in nb.cells
            if c.cell_type == "code" and nbgrader_meta(c).get("solution")
        ]
    found += [
        (p.name, p.parent.name, p.read_text())
        for p in sorted((ROOT / "tests" / "right_solutions").glob("*/*.py"))
    ]
    return found


@pytest.mark.parametrize(("name", "chapter", "source"), _solutions(), ids=[n for n, _, _ in _solutions()])
def test_no_correct_solution_is_refused(name: str, chapter: str, source: str) -> None:
    assert vet(source, _lab_imports(chapter)) == []


def test_ordinary_pytorch_is_not_reflection() -> None:
    ordinary = (
        'class Net(nn.Module):\n    """Its __init__ makes {self.hidden}."""\n'
        "    def __init__(self):\n        super().__init__()\n"
        "        self.hidden = nn.Linear(2, 2)\n    def forward(self, x):\n        return self.hidden(x)\n"
        "n = sum(1 for _ in Net().modules())\nv = torch.ones(2)._version\nname = type(v).__name__\n"
        "s = torch.stack([v, v]).trace()\nmsg = '{} {:.3f} {name!r}'.format(1, 2.0, name=name)\n"
    )
    assert vet(ordinary, MODULES) == []


def test_a_stated_rule_follows_the_helpers_an_exercise_uses() -> None:
    solutions = {
        "transpose_view": "def transpose_view(t: torch.Tensor, a, b):\n    return helper(t)\n",
        "other": "import numpy as np\n\ndef helper(t):\n    return t.mT\n\nt = 3\n",
    }
    [finding] = stated_rule_breaks(solutions, "transpose_view", (".t", ".mT", "torch"))
    assert finding.line == 4 and "'mT'" in finding.what and "in 'other'" in finding.what
    assert stated_rule_breaks({"x": "def f(t):\n    return t.mT\n"}, "x", ("transpose",)) == []


def _lab() -> nbformat.NotebookNode:
    return nbformat.read(FIXTURES / "course" / "fx_basic" / "lab_basic.ipynb", as_version=4)


def test_cells_a_student_added_never_run_and_are_listed() -> None:
    source, submitted = _lab(), _lab()
    submitted.cells.insert(0, nbformat.v4.new_code_cell("import os\nos._exit(0)"))
    restored = restore(source, submitted)
    assert restored.added == [0]
    assert all("os._exit" not in c.source for c in restored.cells)
    assert [c.key for c in restored.cells if c.graded] == ["test_scale", "test_relu_grad"]


def test_every_copy_of_a_test_cell_is_compared() -> None:
    source, submitted = _lab(), _lab()
    test = next(c for c in submitted.cells if nbgrader_meta(c).get("grade_id") == "test_scale")
    submitted.cells.append(nbformat.from_dict(dict(test)))  # an exact copy at the end ...
    test.source = "pass"  # ... and the one in place emptied
    restored = restore(source, submitted)
    assert restored.altered == ["test_scale"] and restored.duplicated == ["test_scale"]
    assert "assert_close" in next(c.source for c in restored.cells if c.key == "test_scale")


def test_a_refused_solution_cell_runs_as_its_blank_release() -> None:
    source, submitted = _lab(), _lab()
    cell = next(c for c in submitted.cells if nbgrader_meta(c).get("grade_id") == "scale")
    cell.source = "import sys\ndef scale(t, factor):\n    return t * factor\n"
    restored = restore(source, submitted)
    assert [str(f) for f in restored.refused["scale"]][0].startswith("line 1: importing 'sys'")
    assert "raise NotImplementedError()" in restored.solutions["scale"]


def test_a_solution_cell_may_not_define_another_exercises_function() -> None:
    """An exercise's stated rules are read in its own cell: defined in another solution cell, its code would
    escape them (an outsider's route: lab 02's plain-Python exercises written with NumPy in another cell)."""
    source, submitted = _lab(), _lab()
    scale_cell = next(c for c in submitted.cells if nbgrader_meta(c).get("grade_id") == "scale")
    relu_cell = next(c for c in submitted.cells if nbgrader_meta(c).get("grade_id") == "relu_grad")
    scale_cell.source += "\n\ndef relu_grad(x):\n    return (x > 0).to(x.dtype)\n"
    relu_cell.source = "# defined above\n"
    restored = restore(source, submitted)
    assert [str(f) for f in restored.refused["scale"]] == [
        "line 7: defines 'relu_grad', the exercise of solution cell 'relu_grad' (each exercise's code goes in its "
        "own cell)"
    ]
    assert "raise NotImplementedError()" in restored.solutions["scale"]
    base = scale_cell.source.split("\n\ndef relu_grad")[0]
    for binding in (
        "relu_grad = print\n",
        "if True:\n    def relu_grad(x):\n        return x\n",
        "(relu_grad := len)\n",
        "with open_thing() as relu_grad:\n    pass\n",
        "match len:\n    case relu_grad:\n        pass\n",
        "def f():\n    global relu_grad\n",
        "[(relu_grad := v) for v in (len,)]\n",
        "for relu_grad in (len,):\n    pass\n",
    ):
        scale_cell.source = binding + base
        refused = restore(source, submitted).refused.get("scale", [])
        assert any("defines 'relu_grad'" in str(f) for f in refused), binding
    scale_cell.source = (
        "def helper():\n    relu_grad = 1\n    return relu_grad\n\n" + base
    )  # a local of its own
    assert "scale" not in restore(source, submitted).refused


def test_an_iterative_exercise_refuses_recursion_through_any_helper() -> None:
    solutions = {
        "order": "def order(o):\n    def walk(n):\n        return [walk(c) for c in n]\n    return helper(o)\n",
        "other": "def helper(o):\n    return again(o)\n\ndef again(o):\n    return helper(o) if o else []\n",
    }
    found = {(f.line, f.what) for f in stated_rule_breaks(solutions, "order", iterative=True)}
    assert found == {
        (2, "'walk' calls itself"),
        (1, "'helper' calls itself (in 'other', which it uses)"),
        (4, "'again' calls itself (in 'other', which it uses)"),
    }
    loop = {
        "order": "def order(o):\n    todo, seen = [o], []\n    while todo:\n        seen.append(todo.pop())\n    return seen\n"
    }
    assert stated_rule_breaks(loop, "order", iterative=True) == []


# Issue 49's routes: each ran an unvetted string, blinded the recorders or reached what graded code must not
# (frames, processes, threads, a shell, custom operators, mounted files, module attributes), through doors a
# denylist did not list. Each must be refused in the labs it was tried on.
ROUTES = {
    "a class-pattern keyword": "def spy(f):\n    match f:\n        case object(__globals__=g):\n            return g\n",
    "a class-pattern keyword, single underscore": "def spy(f):\n    match f:\n        case object(_x=g):\n            return g\n",
    "string.Formatter's fields": "import string\nfield = string.Formatter().get_field('0.__globals__', [len], {})",
    "a format field built at run time": "name = '_' * 2 + 'globals' + '_' * 2\ntext = ('{0.' + name + '}').format(len)",
    "typing evaluates a string annotation": "import typing\ndef f(x: 'print(1)'):\n    pass\n"
    "hints = typing.get_type_hints(f)",
    "a string inside an annotation": "def f(x: list['print(1)']):\n    pass\n",
    "typing's forward references": "import typing\nref = typing.ForwardRef('print(1)')",
    "enum.bltns.exec": "import enum\nenum.bltns.exec('import os')",
    "enum.bltns.open reads a mounted file": "import enum\ntext = enum.bltns.open('/etc/hostname').read()",
    "dataclasses.inspect.stack": "import dataclasses\nframes = dataclasses.inspect.stack()",
    "torch.inspect's frame locals": "f = torch.inspect.currentframe()\nup = torch.inspect.getargvalues(f).locals",
    "torch.inspect.getmodule": "rules = torch.inspect.getmodule(torch.inspect.stack)",
    "a module through a loop alias": "for m in (torch,):\n    m.allclose = lambda *a, **k: True\n",
    "a module in a list": "[torch][0].allclose = lambda *a, **k: True",
    "a module passed to a function": "def patch(m):\n    m.allclose = len\npatch(torch)",
    "a module as a default": "def patch(m=np):\n    m.allclose = len\n",
    "builtins.sorted replaced": "import builtins\nbuiltins.sorted = lambda values, **k: []",
    "functools.singledispatch's wrapper": "import functools\nbroadcast_shape = functools.singledispatch(len)\n"
    "broadcast_shape.register(tuple, np.broadcast_shapes)",
    "a process from torch.cuda.tunable.mp": "ctx = torch.cuda.tunable.mp.get_context('fork')\n"
    "ctx.Process(target=print).start()",
    "threads from tunable.concurrent.futures": "pool = torch.cuda.tunable.concurrent.futures.ThreadPoolExecutor(2)",
    "a shell through spawnv_passfds": "torch.cuda.tunable.mp.util.spawnv_passfds('/bin/sh', ['sh', '-c', 'id'], ())",
    "torch.library kernels": "lib = torch.library.Library('spy', 'DEF')\nlib.define('f(Tensor x) -> Tensor')\n"
    "lib.impl('f', lambda x: x, 'CompositeExplicitAutograd')",
    "a custom op": "@torch.library.custom_op('spy::g', mutates_args=())\ndef g(x: torch.Tensor) -> torch.Tensor:\n"
    "    return x.clone()\n",
    "torch.ops loads native code": "torch.ops.load_library('/tmp/spy.so')",
    "__del__ through type()": "Spy = type('Spy', (), {'__del__': lambda self: None})",
    "a dunder built at run time through type()": "name = '_' * 2 + 'del' + '_' * 2\nSpy = type('Spy', (), {name: print})",
    "frames through a generator": "def gen():\n    yield\nup = gen().gi_frame.f_back",
    "frames through a traceback": "try:\n    1 / 0\nexcept ZeroDivisionError as err:\n    up = err.__traceback__.tb_frame",
    "frames through torch.sys": "up = torch.sys._getframe(1)",
    "modules as overridable keys": "found = list(torch.overrides.get_overridable_functions())",
    "torch.compile's workers": "fast = torch.compile(lambda x: x)",
    "a loader's worker processes": "loader = torch.utils.data.DataLoader([1, 2], num_workers=2)",
    "multiprocessing": "import multiprocessing\nmultiprocessing.Process(target=print).start()",
    "concurrent.futures": "from concurrent.futures import ThreadPoolExecutor",
    "subprocess": "import subprocess\nsubprocess.run(['id'])",
    "the IPython history": "seen = _ih",
    "a decorator": "@getattr\ndef f():\n    pass\n",
    "a default": "def f(x=vars()):\n    return x\n",
    "a keyword argument": "found = dict(**{'__globals__': 1})",
    "an attribute getter": "import operator\nread = operator.attrgetter('x')",
    "a private module under a public name": "from torch.utils import _python_dispatch",
    "a shell escape": "!id",
    "a function rebuilt from a code object": "f = lambda m: m.x\n"
    "g = type(f)(f.__code__.replace(co_names=('__globals__',)), {})",
    "a metaclass from type(type(x))": "name = '_' * 2 + 'del' + '_' * 2\nSpy = type(type(0))('Spy', (), {name: print})",
    "abc.ABCMeta builds a class": "import abc\nname = '_' * 2 + 'del' + '_' * 2\nSpy = abc.ABCMeta('Spy', (), {name: print})",
    "a library class as a value": "T = type(torch.ones(1))\nT.clone = len",
    "numpy.load's pickles, positionally": "state = np.load('x.npy', None, True)",
    # an outsider's tries after the allowlist landed: numpy's file readers (one unpickles: exec), torch's
    "NpzFile's pickles, positionally": "import numpy as np\nitem = np.lib.npyio.NpzFile(None, False, True)['x']",
    "numpy's DataSource reads a mounted file": "import numpy as np\ntext = np.lib.npyio.DataSource(None).open('/etc/passwd')",
    "numpy.memmap": "import numpy as np\nm = np.memmap('/tmp/y.bin', mode='w+', shape=(4,))",
    "numpy.fromfile": "import numpy as np\nm = np.fromfile('/etc/passwd', dtype=np.uint8)",
    "numpy.genfromtxt": "import numpy as np\nm = np.genfromtxt('/etc/passwd')",
    "an array's tofile": "import numpy as np\nnp.zeros(3).tofile('/tmp/x')",
    "a storage from a file": "s = torch.UntypedStorage.from_file('/etc/passwd', False, 4)",
    "contextlib.chdir": "import contextlib\nwith contextlib.chdir('/'):\n    pass\n",
    # a second outsider's tries: code generated and run by fx and dynamo, files through onnx, numpy and the
    # profiler, a format method read in a class pattern, code objects of compiled functions
    "torch.ao's fx tracer": "from torch.ao.quantization.fx.tracer import QuantizationTracer\n"
    "graph = QuantizationTracer([], []).trace(torch.nn.Identity())",
    "a module's compile": "model = torch.nn.Linear(2, 2)\nmodel.compile()",
    "a graph module's recompile": "def backend(gm, inputs):\n    gm.recompile()\n    return gm",
    "onnx's external data reads a file": "import onnx\nt = onnx.TensorProto()\n"
    "onnx.external_data_helper.load_external_data_for_tensor(t, '/etc')",
    "onnx.save writes a file": "import onnx\nonnx.save(onnx.ModelProto(), '/tmp/x')",
    "an array's dump": "import numpy as np\nnp.arange(3).dump('/tmp/x')",
    "the profiler's trace": "with torch.profiler.profile() as p:\n    pass\np.export_chrome_trace('/tmp/x')",
    "a picture saved": "from labutils import strides\nstrides.show(torch.arange(6)).savefig('/tmp/x.png')",
    "format read in a class pattern": "match 'x':\n    case str(format=fmt):\n        text = fmt(len)\n",
    "a compiled function's code object": "import numpy as np\ncode = np.random.Generator.normal.func_code",
    "hundreds of imports": "".join(f"import torch.nn.functional as f{i}\n" for i in range(40)),
}


@pytest.mark.parametrize("chapter", ["01_autograd", "02_tensors"])
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_every_route_of_issue_49_is_refused_by_its_line(route: str, chapter: str) -> None:
    source = ROUTES[route]
    findings = vet(source, _lab_imports(chapter))
    assert findings, f"{route}: not refused in {chapter}"
    assert all(1 <= f.line <= source.count("\n") + 1 for f in findings), findings


def test_a_lab_that_uses_a_denied_module_allows_it_there_only() -> None:
    custom_op = ROUTES["a custom op"]
    assert vet(custom_op, _lab_imports("05_deployment")) == []  # lab 05 teaches custom operators
    assert vet(custom_op, _lab_imports("02_tensors")) != []
    assert vet("ranks = dist.get_world_size()", _lab_imports("04_distributed")) == []
    assert (
        vet("import torch.distributed as dist\nranks = dist.get_world_size()", _lab_imports("01_autograd"))
        != []
    )
    assert vet("torch.ops.load_library('/tmp/x.so')", _lab_imports("05_deployment")) != []  # native code
    explain = "found = torch._dynamo.explain(len)"  # its guards hold weak references to modules
    assert vet(explain, _lab_imports("05_deployment")) == []
    assert vet(explain, _lab_imports("01_autograd")) != [] and vet(explain, _lab_imports("02_tensors")) != []


def test_a_library_function_bound_to_a_graded_name_breaks_the_stated_rule() -> None:
    """``broadcast_shape = numpy.broadcast_shapes`` is refused by lab 02's rule before it runs (and seen by the
    rule window where it runs: tests/test_rules.py)."""
    from graders.grader.grading import load_lab

    forbid = (
        load_lab(ROOT / "course" / "02_tensors" / "lab_tensors.ipynb").probes["test_broadcast_shape"].forbid
    )
    for spelling in (
        "broadcast_shape = numpy.broadcast_shapes",
        "broadcast_shape = np.broadcast_shapes",
        "from numpy import broadcast_shapes as broadcast_shape",
    ):
        assert vet(spelling, _lab_imports("02_tensors")) == []  # no reflection: ordinary code
        assert stated_rule_breaks({"broadcast_shape": spelling}, "broadcast_shape", forbid), spelling


@pytest.mark.parametrize(
    "identifier",
    [
        "def f(__x):\n    pass\n",
        "def f(*, __x=1):\n    pass\n",
        "class __C:\n    pass\n",
        "global __y\n",
        "for __z in []:\n    pass\n",
        "try:\n    pass\nexcept Exception as __e:\n    pass\n",
        "match 1:\n    case [*__rest]:\n        pass\n",
        "match 1:\n    case {**__rest}:\n        pass\n",
        "x = lambda __a: 1\n",
        "import math as __m\n",
        "y = __spec__\n",
    ],
)
def test_every_identifier_is_checked(identifier: str) -> None:
    assert vet(identifier, MODULES), identifier


def test_a_cell_over_the_size_limit_is_refused_before_it_is_parsed() -> None:
    started = time.thread_time()
    cached = _read_within_bounds.cache_info().currsize
    [finding] = vet("x = 1\n" * ((1 << 20) // 6 + 1), MODULES)  # 1 MiB of a line Python parses
    assert finding.line == 1 and f"at most {MAX_CELL_BYTES}" in finding.what
    assert time.thread_time() - started < 0.5
    assert _read_within_bounds.cache_info().currsize == cached  # nothing of it is kept


def test_a_cell_of_many_braces_is_refused_before_it_is_parsed() -> None:
    """One 64 KiB f-string of 21,800 fields took the parser 0.5-0.7 s (quadratic in the fields), holding the
    parse lock; over MAX_BRACES a cell is refused unparsed, at the line of the first brace too many."""
    cell = "x = 1\n" + 'y = f"' + "{x}" * 21_800 + '"\n'
    assert len(cell.encode()) <= MAX_CELL_BYTES
    started = time.thread_time()
    cached = _read_within_bounds.cache_info().currsize
    [finding] = vet(cell, MODULES)
    assert finding.line == 2 and f"more than {MAX_BRACES} braces" in finding.what
    assert time.thread_time() - started < 0.05
    assert _read_within_bounds.cache_info().currsize == cached


@pytest.mark.parametrize("shape", ["one f-string", "one per line"])
def test_the_slowest_cell_within_the_bounds_parses_quickly(shape: str) -> None:
    """The worst a cell can cost the parser (and every thread waiting on its lock) under MAX_BRACES: the
    bound is what the lock's docs promise, measured as this thread's CPU time."""
    fields = MAX_BRACES
    cell = (
        'x = 1\ny = f"' + "{x}" * fields + '"\n'
        if shape == "one f-string"
        else "x = 1\n" + 'y = f"{x}"\n' * fields
    )
    cell += "z = x + x  # " + "w" * (MAX_CELL_BYTES - len(cell) - 20) + "\n"
    _read_within_bounds.cache_clear()
    started = time.thread_time()
    assert vet(cell, MODULES) == []
    assert (
        time.thread_time() - started < 1.0
    )  # about 0.13 s measured (docs/benchmarks.md): a quadratic parse would take seconds


def test_an_accepted_cell_is_parsed_once() -> None:
    """The vetting's tree is the one the names it binds are read from (graders.grader.cells.top_level_names)."""
    cell = "def helper_once(a):\n    return a + 1\n"
    _read_within_bounds.cache_clear()
    assert vet(cell, MODULES) == []
    assert top_level_names(cell) == {"helper_once": 1}
    assert _read_within_bounds.cache_info().misses == 1


@pytest.mark.parametrize(
    "spelling",
    [
        "import torch.backends.xeon.run_cpu\n",  # a launcher: subprocess.Popen of numactl/taskset
        "from torch.backends.xeon import run_cpu\n",
        "from torch.backends.xeon.run_cpu import main\n",
        "launch = torch.backends.xeon.run_cpu.main\n",
        "import torch.utils.hipify.hipify_python as h\n",  # rewrites files
        "import onnxruntime.tools.symbolic_shape_infer\n",
        "import torch.nn.utils.prune\n",
    ],
)
def test_a_module_its_package_does_not_load_is_refused(spelling: str) -> None:
    """What ``import torch`` does not load and no package hands out is a tool or a launcher, not API: refused
    (torch.backends.xeon.run_cpu starts processes), except where the lab's own code uses it."""
    for chapter in ("01_autograd", "02_tensors"):
        [finding] = vet(spelling, _lab_imports(chapter))
        assert "does not load" in finding.what, (chapter, finding)
    assert vet(spelling, imported_names((spelling, "import torch\n"))) == []


@pytest.mark.parametrize(
    "spelling",
    [
        "from collections.abc import Iterable\nok = isinstance([1], Iterable)\n",
        "import collections.abc\nok = isinstance([1], collections.abc.Sequence)\n",
        "import collections\nok = isinstance([1], collections.abc.Sized)\n",
    ],
)
def test_a_standard_library_submodule_of_an_allowed_module_is_api(spelling: str) -> None:
    """The standard library's packages load their API on demand (``import collections`` does not load
    ``collections.abc``): the tool-module rule is for installed packages, so plain API is not refused."""
    for chapter in ("01_autograd", "02_tensors"):
        assert vet(spelling, _lab_imports(chapter)) == [], chapter


@pytest.mark.parametrize(
    "spelling",
    [
        "from collections import abc\nabc.Sized.register = len\n",
        "import collections.abc\nlib = collections.abc._collections_abc\n",
    ],
)
def test_a_standard_library_submodule_keeps_the_other_checks(spelling: str) -> None:
    """Exempt from the tool-module rule is not exempt from the rest: no module as a value, no private names."""
    assert vet(spelling, _lab_imports("02_tensors")) != []


@pytest.mark.parametrize(
    "spelling",
    [
        # a parameter named self reads whatever private attribute the cell also stores, on any object
        "def grab(self, g):\n    return self._evaluate(g, {}, frozenset())\n"
        "def unused(self):\n    self._evaluate = None\n",
        "class C:\n    def __init__(self):\n        self._module = None\n\n    def get(self):\n"
        "        return self._module\n",
        "import warnings\nm = warnings.catch_warnings()._module\n",
    ],
)
def test_no_private_attribute_a_class_of_its_own_included(spelling: str) -> None:
    """A method can be called with any object as ``self`` (``C.get(library_object)``): ``self._x`` is refused
    like any private attribute, so no library object's private state (``ForwardRef._evaluate``) is reached."""
    for chapter in ("01_autograd", "02_tensors"):
        findings = vet(spelling, _lab_imports(chapter))
        assert any("private attribute" in f.what for f in findings), (chapter, findings)


@pytest.mark.parametrize(
    "spelling",
    [
        'import typing\nT = typing.Optional["[exec(c), int][1]"]\n',
        'from typing import List\nT = List["int"]\n',
        'import typing\nT = typing.Dict[str, typing.Tuple["x", int]]\n',
    ],
)
def test_a_string_in_a_typing_subscript_is_refused(spelling: str) -> None:
    """typing makes the string a forward reference (code it may evaluate later)."""
    [finding] = vet(spelling, _lab_imports("02_tensors"))
    assert "forward reference" in finding.what


def test_strings_in_a_subscript_of_the_cells_own_values_stay_allowed() -> None:
    cell = 'd = {"k": 1}\nx = d["k"]\nT = list["int"]\nshape = torch.ones(2, 3).shape\n'
    assert vet(cell, _lab_imports("02_tensors")) == []


def test_the_vetting_imports_no_module_a_cell_names() -> None:
    """In a fresh grader process: vetting cells that name modules outside the packages' own loads imports
    none of them (importing runs their code in the trusted grader), and numpy's lazy ``random`` stays API."""
    names = [
        "torch.backends.xeon",
        "torch.backends.xeon.run_cpu",
        "torch.utils.hipify",
        "onnxruntime.tools",
        "onnxruntime.tools.symbolic_shape_infer",
        "torch.nn.utils.prune",
    ]
    script = (
        "import json, sys\n"
        "from graders.grader.vetting import vet\n"
        "cells = ['import torch.backends.xeon.run_cpu', 'from torch.utils.hipify import hipify_python',\n"
        "         'import onnxruntime.tools.symbolic_shape_infer', 'p = torch.nn.utils.prune.l1_unstructured']\n"
        "refused = [bool(vet(c, ['torch'])) for c in cells]\n"
        "honest = vet('r = np.random.default_rng(0).normal(size=3)\\ns = np.fft.fft(r)', ['np'])\n"
        f"print(json.dumps([refused, honest, [m for m in {names!r} if m in sys.modules]]))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    refused, honest, imported = json.loads(found.stdout.strip().splitlines()[-1])
    assert refused == [True] * 4 and honest == [] and imported == [], found.stderr[-2000:]


def test_magics_are_refused_without_transforming_the_cell() -> None:
    """100 magics used to re-tokenise the cell once each (37-65 s for 293 KiB, under a lock)."""
    magics = "".join(f"%time x{i} = {i}\n" for i in range(500))
    started = time.thread_time()
    [finding] = vet(magics, MODULES)
    assert "not plain Python" in finding.what and finding.line == 1
    assert time.thread_time() - started < 0.5


def test_stated_rules_are_linear_in_the_cells_size() -> None:
    """10,000 lines that all bind and mention one name took 15-23 s (quadratic); here each name is followed
    once. The cell stays under the size limit, so the analysis itself is measured, by this thread's CPU time
    (wall time grew past the bound when make test's other lanes loaded the machine; CPU time does not)."""
    lines = "a = a\n" * 10_000  # 60,000 bytes
    assert len(lines) <= MAX_CELL_BYTES
    started = time.thread_time()
    assert (
        stated_rule_breaks({"x": lines + "def f():\n    return a\n"}, "x", ("numpy",), iterative=True) == []
    )
    assert time.thread_time() - started < 2.0


def _notebook_of(size: int, magics: int) -> nbformat.NotebookNode:
    """The fixture lab with its first solution cell replaced by ``magics`` magic lines of ``size`` bytes in all."""
    nb = _lab()
    cell = next(c for c in nb.cells if nbgrader_meta(c).get("solution"))
    line = "%time x = 1  # " + "y" * (size // magics)
    cell.source = "\n".join([line] * magics)
    return nb


def test_a_20_mib_notebook_of_500_magics_does_not_hold_up_an_honest_one() -> None:
    """No lock held across a cell's vetting: an honest notebook restored while two huge ones are vetted in other threads
    takes what it takes alone; the huge ones are refused by size, within a stated memory bound."""
    huge, honest = _notebook_of(20 << 20, 500), _lab()
    tracemalloc.start()
    started = time.perf_counter()
    with ThreadPoolExecutor(3) as pool:
        big = [pool.submit(restore, _lab(), huge) for _ in range(2)]
        alone = pool.submit(lambda: (restore(_lab(), honest), time.perf_counter() - started)).result()
        refused = [f.result() for f in big]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert alone[1] < 2.0 and not alone[0].refused
    assert all("bytes" in str(r.refused["scale"][0]) for r in refused)
    assert time.perf_counter() - started < 10.0
    assert peak < 64 << 20, f"{peak >> 20} MiB"  # two 20 MiB cells are read, never copied nor parsed


def test_a_stated_rule_sees_a_module_under_another_name() -> None:
    """``import numpy as xp`` in another solution cell, and the notebook's ``F``, name the modules they are."""
    solutions = {
        "shape": "def shape(*s):\n    return xp.broadcast_shapes(*s)\n",
        "other": "import numpy as xp\n",
    }
    [finding] = stated_rule_breaks(solutions, "shape", ("numpy",))
    assert "'numpy'" in finding.what and "in 'other'" in finding.what
    assert stated_rule_breaks({"f": "def f(x):\n    return F.relu(x)\n"}, "f", ("torch",))


@pytest.mark.parametrize(
    "spelling",
    [
        "torch.nn.parallel.parallel_apply([len, len], [(1,), (2,)])",  # a thread per module
        "writer = torch.utils.tensorboard.SummaryWriter()",  # a writer thread
        "import torch.utils.data as data\nloader = data.DataLoader([1], num_workers=2)",
    ],
)
def test_no_thread_or_process_in_a_lab_that_does_not_teach_them(spelling: str) -> None:
    for chapter in ("01_autograd", "02_tensors"):
        assert vet(spelling, _lab_imports(chapter)), (chapter, spelling)


def test_a_parse_that_meets_the_threaded_parser_error_is_repeated(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython 3.11's "AST constructor recursion depth mismatch" (another library parsing outside the lock
    at once) costs one more parse of that cell, never its refusal."""
    import ast

    calls, parse = [], ast.parse

    def flaky(source: str, *args: object, **kwargs: object) -> ast.Module:
        calls.append(source)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=1, after=2)")
        return parse(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ast, "parse", flaky)
    assert vet("seen = 49  # parsed twice", MODULES) == [] and len(calls) == 2


def test_the_grader_never_parses_in_two_threads_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Grading threads share one parser: graders.grader.parsing lets one thread in at a time."""
    import ast
    import threading
    import time

    from graders.grader.parsing import parsed

    inside, most, parse = [0], [0], ast.parse

    def slow(source: str, *args: object, **kwargs: object) -> ast.Module:
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        inside[0] -= 1
        return parse(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ast, "parse", slow)
    threads = [threading.Thread(target=parsed, args=(f"x = {i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1


# A second outsider's routes (each ran a string, a process or a file read in the real sandbox, or took a
# stated rule's points): refused by the class they belong to.
@pytest.mark.parametrize(
    ("spelling", "why"),
    [
        (  # copies a library function's globals (os, sys) into the notebook's: attributes named at run time
            "import functools, contextlib\ndef grab():\n    pass\n"
            "functools.update_wrapper(grab, contextlib.contextmanager, assigned=(), updated=('x',))\n",
            "functools.update_wrapper",
        ),
        (
            "import functools\ndef deco(f):\n    @functools.wraps(f)\n    def g():\n        return f()\n    return g\n",
            "functools.wraps",
        ),
        (  # a storage's .type('a.b') imports what the string names; AttributeError.obj hands it back
            "try:\n    torch.UntypedStorage(1).type('builtins.exec')\nexcept AttributeError as err:\n"
            "    run = err.obj\n",
            ".type(",
        ),
        ("try:\n    x = 1\nexcept AttributeError as err:\n    run = err.obj\n", "'.obj'"),
        (
            "import warnings\nline = warnings.formatwarning('x', UserWarning, '/etc/hostname', 1)\n",
            "warnings.formatwarning",
        ),
        ("out = torch.cond(torch.tensor(True), lambda x: x, lambda x: -x, (torch.ones(1),))\n", "torch.cond"),
        ("torch.set_default_tensor_type('antigravity.x')\n", "torch.set_default_tensor_type"),
        ("x = torch.ones(2).type(name)\n", ".type("),
    ],
)
def test_names_and_strings_that_reach_attributes_at_run_time_are_refused(spelling: str, why: str) -> None:
    for chapter in ("01_autograd", "02_tensors"):
        findings = vet(spelling, _lab_imports(chapter))
        assert any(why in f.what for f in findings), (chapter, findings)


def test_plain_uses_of_the_same_names_stay_allowed() -> None:
    cell = (
        "import re\nPATTERN = re.compile('a+')\nok = PATTERN.search('caab') is not None\n"
        "d = torch.ones(2).type(torch.float64)\nkind = torch.ones(2).device.type\nname = torch.ones(2).type()\n"
    )
    assert vet(cell, _lab_imports("02_tensors")) == []


def test_a_stated_rule_follows_a_name_a_function_binds_global() -> None:
    solutions = {
        "storage_index": "def bind_helper():\n    global bshapes\n    bshapes = torch.broadcast_shapes\n"
        "bind_helper()\n",
        "broadcast_shape": "def broadcast_shape(*shapes):\n    return tuple(bshapes(*shapes))\n",
    }
    [finding] = stated_rule_breaks(solutions, "broadcast_shape", ("broadcast_shapes",))
    assert "broadcast_shapes" in finding.what and "storage_index" in finding.what


def test_a_stated_rule_reads_class_pattern_keywords() -> None:
    solutions = {
        "transpose_view": "def transpose_view(t, d0, d1):\n    match t:\n"
        "        case torch.Tensor(mT=m):\n            return m\n"
    }
    [finding] = stated_rule_breaks(solutions, "transpose_view", (".mT",))
    assert "mT" in finding.what


# A third outsider's route: cached_property's attrname wrote __reduce_ex__ into an instance's __dict__, copy.copy
# called it and set attributes from what it returned, and a positional class pattern read an attribute named by
# __match_args__: eval, a file, a process and a thread from lab 02 code, names built at run time throughout.
@pytest.mark.parametrize(
    ("spelling", "why"),
    [
        (
            "import functools\nclass Holder:\n    @functools.cached_property\n    def slot(self):\n        return 1\n",
            "functools.cached_property",
        ),
        ("import copy\nx = copy.copy([1])\n", "copy"),
        (
            "import dataclasses\nX = dataclasses.make_dataclass('X', [('a', int)])\n",
            "dataclasses",
        ),
        (  # a fourth outsider: a Field's name set after the class, compiled into a subclass's __eq__
            "import dataclasses\n@dataclasses.dataclass\nclass Carrier:\n    x: object = 0\n"
            "dataclasses.fields(Carrier)[0].name = 'x,exec(self.x,dict(me=self))'\n",
            "dataclasses",
        ),
        (
            "import collections.abc\nmatch 1:\n    case collections.abc.Hashable(v):\n        pass\n",
            "positional class pattern",
        ),
    ],
)
def test_run_time_names_reaching_setattr_and_getattr_are_refused(spelling: str, why: str) -> None:
    for chapter in ("01_autograd", "02_tensors"):
        findings = vet(spelling, _lab_imports(chapter))
        assert any(why in f.what for f in findings), (chapter, findings)


def test_deepcopy_stays_where_the_lab_uses_it() -> None:
    assert (
        vet("import copy\nmodel2 = copy.deepcopy(torch.nn.Linear(2, 2))\n", _lab_imports("03_modules")) == []
    )


def test_keyword_class_patterns_stay_allowed() -> None:
    cell = "match torch.ones(2):\n    case torch.Tensor(shape=s):\n        n = s[0]\n"
    assert vet(cell, _lab_imports("02_tensors")) == []
