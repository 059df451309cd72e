"""The policy for graded code (graders.vetting): what a reader of the grader would write to reach the
recorders or the probes is refused by its line, and every correct solution the course knows is not."""

from __future__ import annotations

import nbformat
import pytest

from graders.cells import restore
from graders.coursedir import nbgrader_meta
from graders.vetting import imported_names, stated_rule_breaks, vet
from tests.conftest import FIXTURES, ROOT

MODULES = {"torch", "np", "F", "nn", "dist"}
# One spelling per way in; each must be refused (the line that holds it named).
REACHES = {
    "patch the recorder module": "import graders.rules as rules\nrules.forbidden = None",
    "reach it through sys.modules": "import torch\nrecorder = torch.sys.modules['graders.rules']",
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
    return imported_names(tuple(c.source for c in nbformat.read(lab, as_version=4).cells if c.cell_type == "code"))


def _solutions() -> list[tuple[str, str, str]]:
    found = []
    for lab in sorted((ROOT / "course").glob("*/lab_*.ipynb")):
        nb = nbformat.read(lab, as_version=4)
        found += [(f"{lab.name}:{nbgrader_meta(c)['grade_id']}", lab.parent.name, c.source) for c in nb.cells
                  if c.cell_type == "code" and nbgrader_meta(c).get("solution")]
    found += [(p.name, p.parent.name, p.read_text()) for p in sorted((ROOT / "tests" / "right_solutions").glob("*/*.py"))]
    return found


@pytest.mark.parametrize(("name", "chapter", "source"), _solutions(), ids=[n for n, _, _ in _solutions()])
def test_no_correct_solution_is_refused(name: str, chapter: str, source: str) -> None:
    assert vet(source, _lab_imports(chapter)) == []


def test_ordinary_pytorch_is_not_reflection() -> None:
    ordinary = ("class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self._hidden = nn.Linear(2, 2)\n    def forward(self, x):\n        return self._hidden(x)\n"
                "n = sum(1 for _ in Net().modules())\nv = torch.ones(2)._version\nname = type(v).__name__\n"
                "s = torch.stack([v, v]).trace()\nmsg = '{} {:.3f} {name!r}'.format(1, 2.0, name=name)\n")
    assert vet(ordinary, MODULES) == []


def test_a_stated_rule_follows_the_helpers_an_exercise_uses() -> None:
    solutions = {"transpose_view": "def transpose_view(t: torch.Tensor, a, b):\n    return helper(t)\n",
                 "other": "import numpy as np\n\ndef helper(t):\n    return t.mT\n\nt = 3\n"}
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


def test_an_iterative_exercise_refuses_recursion_through_any_helper() -> None:
    solutions = {"order": "def order(o):\n    def walk(n):\n        return [walk(c) for c in n]\n    return helper(o)\n",
                 "other": "def helper(o):\n    return again(o)\n\ndef again(o):\n    return helper(o) if o else []\n"}
    found = {(f.line, f.what) for f in stated_rule_breaks(solutions, "order", iterative=True)}
    assert found == {(2, "'walk' calls itself"), (1, "'helper' calls itself (in 'other', which it uses)"),
                     (4, "'again' calls itself (in 'other', which it uses)")}
    loop = {"order": "def order(o):\n    todo, seen = [o], []\n    while todo:\n        seen.append(todo.pop())\n    return seen\n"}
    assert stated_rule_breaks(loop, "order", iterative=True) == []
