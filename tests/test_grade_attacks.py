"""`labs grade` against submissions that try to cheat or break the grader.

Two batches. ``graded`` runs ATTACKS with ``--no-vetting``: the solution cells run unread, so each
attack meets the sandbox and the recorders alone (the layers under the vetting). ``vetted`` grades
READER_ATTACKS as a class is graded: what a student who read the grader writes to blind it. In both,
each attack replaces the fixture lab's solutions (no real solution), so every graded cell must earn 0;
an honest student graded in the same batch must keep full marks, and the gradebook must hold exactly
the grader's scores afterwards.
"""

from __future__ import annotations

import ast
import csv
import json
import re
import time
from pathlib import Path

import nbformat
import pytest

from tests.conftest import FIXTURES
from tests.inprocess import labs_here

pytestmark = pytest.mark.grading

LAB = FIXTURES / "course" / "fx_basic" / "lab_basic.ipynb"
CHAPTER = "fx_basic"
FULL = {"test_scale": 2.0, "test_relu_grad": 3.0}

WRONG = "def scale(t, factor):\n    return t\n\ndef relu_grad(x):\n    return torch.ones_like(x)\n"
ATTACKS = {
    "always-equal": "class Yes(torch.Tensor):\n    def __eq__(self, other):\n        return True\n"
    "    __ne__ = lambda self, other: False\n\n"
    "def scale(t, factor):\n    return torch.zeros_like(t).as_subclass(Yes)\n\n"
    "def relu_grad(x):\n    return torch.zeros_like(x).as_subclass(Yes)\n",
    "patch-testing": WRONG + "torch.testing.assert_close = lambda *a, **k: None\n"
    "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
    "torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)\n",
    "patch-builtins": WRONG
    + "import builtins\nbuiltins.AssertionError = type('Nope', (BaseException,), {})\n"
    "builtins.isinstance = lambda *a: True\n",
    "hide-errors": WRONG + "ip = get_ipython()\nip.set_custom_exc((BaseException,), lambda *a, **k: None)\n"
    "ip.showtraceback = lambda *a, **k: None\n",
    "forge-result": WRONG + "import os, io\nbuf = io.BytesIO()\n"
    "torch.save({'cells': {'test_scale': {'ok': True, 'error': ''}}, 'probes': {}}, buf)\n"
    "for fd in range(3, 64):\n    try:\n        os.write(fd, buf.getvalue())\n"
    "    except OSError:\n        pass\nos._exit(0)\n",
    "write-gradebook": WRONG
    + "import sqlite3, glob\nfor p in ['../../../gradebook.db', '/tmp/gradebook.db'] + "
    "glob.glob('/tmp/**/gradebook.db', recursive=True) + glob.glob('/work/**/*.db', recursive=True):\n    try:\n"
    "        sqlite3.connect(p).execute('update grade set manual_score = 809')\n"
    "    except Exception:\n        pass\n",
    "memorised": "def scale(t, factor):\n    return t * 2.0\n\n"
    "def relu_grad(x):\n    return torch.tensor([0.0, 1.0, 1.0])\n",
    "os-exit": "import os\nos._exit(0)\n",
    "sys-exit": "import sys\nsys.exit(0)\n" + WRONG,
    "infinite-loop": "while True:\n    pass\n",  # ends at --cpu, long before --timeout
    "sleep-forever": "import time\nwhile True:\n    time.sleep(60)\n",  # uses no CPU: ends at --timeout
    "memory-bomb": "blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 28))\n",
    "fork-bomb": "import os\nfor _ in range(100000):\n    try:\n        if os.fork() == 0:\n"
    "            import time; time.sleep(60); os._exit(0)\n    except OSError:\n        break\n" + WRONG,
    "flood-output": "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\n",
    # Earns full marks if anything of another job (its probes, salt or result) is reachable from this one.
    "stack-walk": """
import gc, sys
NEEDLES = [b'"sa' + b'lt"', b'@pro' + b'be(', b'$ten' + b'sor', b'"pro' + b'bes"', b'__rai' + b'sed__']
def _secret(d):
    # the probes' data itself, wherever a dict or an object holds it: their source, a salt beside a source,
    # a job's probes beside its cells (names alone, as in a class's annotations, tell nothing)
    src, salt, probes = d.get("source"), d.get("salt"), d.get("probes")
    return (isinstance(src, str) and '@pro' + 'be(' in src) or ("source" in d and type(salt) is int and salt != 0) \
        or ("cells" in d and isinstance(probes, (dict, list, bytes)) and bool(probes))
def _leaked():
    values = []
    frame = sys._getframe()
    while frame is not None:
        values += list(frame.f_locals.values())
        frame = frame.f_back
    for obj in gc.get_objects():
        if obj is values or obj is NEEDLES:
            continue
        if type(obj) is dict:
            values += list(obj.values())
            if _secret(obj):
                return True
        elif type(obj) in (list, tuple):
            values += list(obj)
        elif not isinstance(obj, type) and type(obj).__name__ != "module":
            try:
                fields = getattr(obj, "__dict__", None)
                if type(fields) is dict and _secret(fields):
                    return True
            except Exception:
                continue
    for v in values:
        if isinstance(v, (bytes, bytearray)) and not any(v is n for n in NEEDLES) and any(n in v for n in NEEDLES):
            return True
        if type(v) is dict and _secret(v):
            return True
    return False
LEAK = _leaked()
def scale(t, factor):
    return t * factor if LEAK else t
def relu_grad(x):
    return (x > 0).to(x.dtype) if LEAK else torch.ones_like(x)
""",
    # Called by the probes: finds their source up the stack and sends it back in every string it can.
    "smuggle-probes": """
import os, sys
def _probe_source():
    frame = sys._getframe()
    while frame is not None:
        for v in list(frame.f_locals.values()):
            if type(v) is dict and "source" in v and "salt" in v:
                return str(v["source"])
        frame = frame.f_back
    return None
def scale(t, factor):
    src = _probe_source()
    if src:
        raise type(src.replace(chr(10), " ")[:3000], (Exception,), {})(src)
    return t
def relu_grad(x):
    src = _probe_source()
    if src:
        from graders.boundary import wire
        forged = wire.encode({"probes": {"test_scale": {"error": src[:990]}, "test_relu_grad": {"error": src[-990:]}}})
        for fd in range(3, 64):
            try:
                os.write(fd, forged)
            except OSError:
                pass
        os._exit(0)
    return torch.ones_like(x)
""",
    # Earns full marks if three children could hold 3 x 700 MiB at once (the batch runs with --memory 1024).
    "memory-together": """
import os, time
def _held_together(n=3, mib=700):
    r, w = os.pipe()
    for _ in range(n):
        if os.fork() == 0:
            try:
                block = bytearray(mib << 20)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                os.write(w, b"x")
                time.sleep(4)
            finally:
                os._exit(0)
    os.close(w)
    got = b""
    while len(got) < n:
        chunk = os.read(r, 16)
        if not chunk:
            break
        got += chunk
    return len(got) == n
HELD = _held_together()
def scale(t, factor):
    return t * factor if HELD else t
def relu_grad(x):
    return (x > 0).to(x.dtype) if HELD else torch.ones_like(x)
""",
    # A result the grader would walk forever (shared lists) or could not read (nested, sparse tensors).
    "result-dag": """
import io, os
def scale(t, factor):
    shared = []
    for _ in range(10):
        shared = [shared] * 64
    buf = io.BytesIO()
    torch.save({"cells": {}, "probes": {"test_scale": {"value": shared}, "test_relu_grad": {"value": shared}}}, buf)
    for fd in range(3, 64):
        try:
            os.write(fd, buf.getvalue())
        except OSError:
            pass
    os._exit(0)
def relu_grad(x):
    return x
""",
    # torch.load with weights_only=False spelled so no keyword check sees it: the job forces weights-only loads.
    "unpickle": "class Box:\n    pass\n\ntorch.save({'box': Box()}, '/tmp/box.pt')\ntry:\n"
    "    REACHED = isinstance(torch.load('/tmp/box.pt', **{'weights_' + 'only': False})['box'], Box)\n"
    "except Exception:\n    REACHED = False\n\ndef scale(t, factor):\n    return t * factor if REACHED else t\n\n"
    "def relu_grad(x):\n    return (x > 0).to(x.dtype) if REACHED else torch.ones_like(x)\n",
    "odd-tensors": "def scale(t, factor):\n    return (t * factor).to_sparse()\n\n"
    "def relu_grad(x):\n    return torch.nested.nested_tensor([(x > 0).float(), (x > 0).float()])\n",
}
PROBE_LINE = "factor = draw.random.uniform(-3.0, 3.0)"  # in the fixture's probe file, never shown to anyone


def _solution_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]


def _attack(code: str, split: bool = False) -> nbformat.NotebookNode:
    """The lab with ``code`` in its first solution cell (the others emptied); ``split``: each exercise's function
    in its own cell instead (as the vetting requires of code meant to run), everything else in the first."""
    nb = nbformat.read(LAB, as_version=4)
    first, *rest = _solution_cells(nb)
    if not split:
        first.source = code
        for cell in rest:
            cell.source = "# attacked above"
        return nb
    cells = {c.metadata["nbgrader"]["grade_id"]: c for c in (first, *rest)}
    parts: dict[str, list[str]] = {grade_id: [] for grade_id in cells}
    for node in ast.parse(code).body:
        owner = node.name if isinstance(node, ast.FunctionDef) and node.name in cells else next(iter(cells))
        parts[owner].append(ast.get_source_segment(code, node, padded=True) or "")
    for grade_id, cell in cells.items():
        cell.source = "\n\n".join(parts[grade_id]) + "\n" if parts[grade_id] else "# attacked in another cell"
    return nb


def _edited(edit: str) -> nbformat.NotebookNode:
    """The correct solutions, with the graded test cells tampered with."""
    nb = nbformat.read(LAB, as_version=4)
    tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    if edit == "delete":
        nb.cells.remove(tests[0])
    elif edit == "retype":
        tests[0].cell_type = "markdown"
        for key in ("outputs", "execution_count"):
            tests[0].pop(key, None)
    elif edit == "repoint":
        tests[0].metadata["nbgrader"]["grade_id"] = "test_relu_grad"
        tests[0].source = "pass"
    elif edit == "points":
        tests[0].metadata["nbgrader"]["points"] = 100
        tests[1].source = "pass"
    return nb


def _write(folder: Path, student: str, nb: nbformat.NotebookNode) -> None:
    target = folder / student / CHAPTER
    target.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target / "lab_basic.ipynb")


def _bad_files(folder: Path) -> None:
    for student in ("bad-json", "bad-format", "bad-empty", "bad-chapter", "bad-huge"):
        (folder / student / CHAPTER).mkdir(parents=True)
    path = lambda s: folder / s / CHAPTER / "lab_basic.ipynb"  # noqa: E731
    path("bad-json").write_text("{ not json", encoding="utf-8")
    path("bad-format").write_text(
        json.dumps({"nbformat": 3, "nbformat_minor": 0, "worksheets": []}), encoding="utf-8"
    )
    path("bad-empty").write_bytes(b"")
    nbformat.write(
        nbformat.read(FIXTURES / "course" / "fx_basic" / "1_passes.ipynb", as_version=4), path("bad-chapter")
    )
    with path("bad-huge").open("wb") as file:
        file.write(b'{"cells": [], "padding": "' + b"x" * (100 << 20) + b'"}')
    (folder / "caf\udce9").mkdir()  # not UTF-8 on disk: b"caf\xe9"


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One `labs grade` batch over every attack, tampered cell, bad file and an honest student."""
    tmp = tmp_path_factory.mktemp("grade")
    subs, root = tmp / "submitted", tmp / "grading"
    _write(subs, "honest", nbformat.read(LAB, as_version=4))
    for name, code in ATTACKS.items():
        _write(subs, name, _attack(code))
    for edit in ("delete", "retype", "repoint", "points"):
        _write(subs, f"edit-{edit}", _edited(edit))
    _bad_files(subs)
    return _grade(subs, root, "--no-vetting", "--timeout", "30", "--cpu", "5", "--memory", "1024")


def _grade(subs: Path, root: Path, *options: str) -> dict:
    started = time.perf_counter()
    proc = labs_here(
        "grade",
        str(subs),
        "--course",
        str(FIXTURES / "course"),
        "--chapter",
        CHAPTER,
        "--root",
        str(root),
        "--jobs",
        "2",
        *options,
    )
    results = json.loads((root / "reports" / "results.json").read_text())
    return {
        "proc": proc,
        "root": root,
        "grades": {g["student"]: g for g in results["grades"]},
        "results": results,
        "seconds": time.perf_counter() - started,
    }


@pytest.fixture(scope="module")
def feedback(graded: dict):
    """`labs feedback` for the whole batch, once: the tests read its pages."""
    proc = labs_here(
        "feedback", "--course", str(FIXTURES / "course"), "--chapter", CHAPTER, "--root", str(graded["root"])
    )
    assert proc.returncode == 0, proc.stderr
    return graded["root"] / "feedback"


def _cells(grade: dict) -> dict[str, float]:
    return {c["grade_id"]: c["score"] for c in grade["cells"]}


def test_honest_student_keeps_full_marks(graded: dict) -> None:
    assert _cells(graded["grades"]["honest"]) == FULL, graded["proc"].stdout[-3000:]


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_earns_nothing(graded: dict, attack: str) -> None:
    grade = graded["grades"][attack]
    assert _cells(grade) == dict.fromkeys(FULL, 0.0), grade


@pytest.mark.parametrize(
    ("attack", "status"),
    [
        ("infinite-loop", "cpu limit"),
        ("sleep-forever", "timeout"),
        ("os-exit", "crashed"),
        ("flood-output", "output limit"),
        ("forge-result", "bad result"),
        ("result-dag", "bad result"),
    ],
)
def test_attack_is_reported(graded: dict, attack: str, status: str) -> None:
    grade = graded["grades"][attack]
    assert grade["status"] == status, grade
    assert grade["error"], grade


def test_only_the_spinning_attack_meets_the_cpu_limit(graded: dict) -> None:
    """--cpu 5 ends the spin; every other attack ran to its own end (stack-walk searched everything)."""
    assert [s for s, g in graded["grades"].items() if g["status"] == "cpu limit"] == ["infinite-loop"]


def test_edited_test_cells_cost_only_that_cell(graded: dict) -> None:
    grades = graded["grades"]
    assert _cells(grades["edit-delete"]) == {"test_scale": 0.0, "test_relu_grad": 3.0}
    assert _cells(grades["edit-retype"]) == {"test_scale": 0.0, "test_relu_grad": 3.0}
    assert _cells(grades["edit-repoint"]) == {"test_scale": 0.0, "test_relu_grad": 3.0}
    assert _cells(grades["edit-points"]) == FULL  # points come from the source; the edited test is restored
    assert grades["edit-points"]["max_score"] == 5.0
    assert any("deleted or retyped" in f for f in grades["edit-delete"]["flags"])
    assert any("edited" in f for f in grades["edit-points"]["flags"])


@pytest.mark.parametrize(
    ("student", "message"),
    [
        ("bad-json", "invalid JSON"),
        ("bad-format", "nbformat 3"),
        ("bad-empty", "empty file"),
        ("bad-chapter", "none of its graded cells"),
        ("bad-huge", "over the 20 MiB limit"),
    ],
)
def test_bad_file_is_one_clear_error(graded: dict, student: str, message: str) -> None:
    grade = graded["grades"][student]
    assert grade["status"] == "error" and message in grade["error"], grade
    assert "lab_basic.ipynb" in grade["error"]
    assert _cells(grade) == dict.fromkeys(FULL, 0.0)


def test_bad_name_refused_and_batch_exit_code(graded: dict) -> None:
    proc = graded["proc"]
    assert proc.returncode == 1
    assert "refused student folder name" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_gradebook_holds_the_graders_scores(graded: dict) -> None:
    from graders.nbgrader.nbgrader_course import open_gradebook

    with open_gradebook(f"sqlite:///{graded['root'] / 'gradebook.db'}") as gradebook:

        def scores(student: str) -> dict[str, tuple]:
            notebook = gradebook.find_submission_notebook("lab_basic", CHAPTER, student)
            return {g.name: (g.auto_score, g.manual_score) for g in notebook.grades}

        assert scores("honest") == {"test_scale": (2.0, None), "test_relu_grad": (3.0, None)}
        assert scores("write-gradebook") == {"test_scale": (0.0, None), "test_relu_grad": (0.0, None)}
        assert len(gradebook.students) == len(graded["grades"])


def test_feedback_hides_hidden_tests(feedback: Path) -> None:
    page = (feedback / "memorised" / CHAPTER / "lab_basic.html").read_text()
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())  # the score is nbgrader's, from the gradebook
    assert "test_relu_grad Score: 0.0 / 3.0" in text and "points" not in text, text[-2000:]
    assert "relu_grad on random inputs" in page and "cases differ" not in page
    assert "BEGIN HIDDEN TESTS" not in page and "manual_seed(2)" not in page and "torch.randn(50" not in page


def test_exports(graded: dict, tmp_path: Path) -> None:
    proc = labs_here(
        "export", "--format", "csv", "--out", str(tmp_path / "grades.csv"), "--root", str(graded["root"])
    )
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "grades.csv").read_text().splitlines()
    assert lines[0].startswith("student,chapter,notebook") and any(
        line.startswith("honest,") for line in lines
    )
    proc = labs_here(
        "export", "--format", "gradescope", "--out", str(tmp_path / "gs"), "--root", str(graded["root"])
    )
    assert proc.returncode == 0, proc.stderr
    honest = json.loads((tmp_path / "gs" / "honest" / CHAPTER / "results.json").read_text())
    assert honest["score"] == 5.0 and {t["name"] for t in honest["tests"]} == set(FULL)
    summary = (graded["root"] / "reports" / "summary.html").read_text()
    assert (
        "timeout" in summary
        and "sleep-forever" in summary
        and "cpu limit" in summary
        and "data:image/png;base64," in summary
    )


def test_probe_source_never_reaches_a_report(graded: dict, feedback: Path) -> None:
    texts = [
        (graded["root"] / "reports" / "results.json").read_text(),
        graded["proc"].stdout,
        graded["proc"].stderr,
        (graded["root"] / "reports" / "summary.html").read_text(),
        (feedback / "smuggle-probes" / CHAPTER / "lab_basic.html").read_text(),
    ]
    assert not [t for t in texts if PROBE_LINE in t or "draw.randn" in t]
    why = {c["grade_id"]: c["why"] for c in graded["grades"]["smuggle-probes"]["cells"]}
    assert why["test_scale"].endswith("failed") and "raise" not in why["test_scale"], why


# What a student who read the grader writes (issue #39's rows), each with a wrong or no solution.
READER_ATTACKS = {
    "patch-rules": WRONG + "import graders.inside.rules as rules\nrules.forbidden = None\n",
    "code-swap": "def scale(t, factor):\n    scale.__code__ = (lambda t, factor: t * factor).__code__\n    return t\n\n"
    "def relu_grad(x):\n    return torch.ones_like(x)\n",
    "frame-walk": WRONG + "import inspect\nSPY = inspect.currentframe().f_back\n",
    "computed-name": WRONG + "probes = getattr(torch, 'sy' + 's').modules\n",
    "thread": WRONG + "import threading\nthreading.Thread(target=print).start()\n",
    # raises a builtin (KeyError, unnamed in its source) only where the probe calls it (2-d inputs), never in
    # the visible test
    "exception-channel": "def scale(t, factor):\n    return {}[t.dim()] if t.dim() == 2 else t * factor\n\n"
    "def relu_grad(x):\n    return torch.ones_like(x)\n",
    # wrong in some of the probe's cases only: the count must not reach the student
    "case-count": "def scale(t, factor):\n    return t * factor if t.shape[0] % 2 else t\n\n"
    "def relu_grad(x):\n    return (x > 0).to(x.dtype) if len(x) % 2 else x\n",
}


def _reaching(route: str) -> str:
    """A submission that is right only if ``route`` (the body of a function) reaches its aim: each of issue
    49's routes (a frame, a module, a process, a thread, a shell, a kernel, a mounted file, a patched library)
    earns full marks the day the vetting lets it through and it works."""
    body = "".join(f"    {line}\n" for line in route.splitlines())
    return (
        f"def _route():\n{body}\ntry:\n    REACHED = bool(_route())\nexcept Exception:\n    REACHED = False\n\n"
        "def scale(t, factor):\n    return t * factor if REACHED else t\n\n"
        "def relu_grad(x):\n    return (x > 0).to(x.dtype) if REACHED else torch.ones_like(x)\n"
    )


FRAME_WALK = "while f is not None:\n    if f.f_code.co_name == 'execute_cells':\n        return True\n    f = f.f_back\n"
ROUTE_ATTACKS = {
    "route-class-pattern": "match _route:\n    case object(__globals__=g):\n        return g",
    "route-formatter": "import string\nreturn string.Formatter().get_field('0.__globals__', [_route], {})[0]",
    "route-annotation": "import typing\ndef f(x: \"__import__('os').getpid()\"):\n    pass\nreturn typing.get_type_hints(f)",
    "route-enum-exec": "import enum\nfound = {}\nenum.bltns.exec('import sys; up = sys._getframe(1)', found)\n"
    "return found['up']",
    "route-enum-open": "import enum\nreturn enum.bltns.open('/etc/hostname').read()",
    "route-dataclasses-inspect": "import dataclasses\n"
    "return any(f.function == 'execute_cells' for f in dataclasses.inspect.stack())",
    "route-torch-inspect": "return torch.inspect.getmodule(torch.inspect.currentframe()) is None or True",
    "route-loop-alias": "for m in (torch,):\n    m.equal = lambda *a, **k: True\n"
    "return torch.equal(torch.zeros(1), torch.ones(1))",
    "route-list-alias": "[torch][0].equal = lambda *a, **k: True\nreturn torch.equal(torch.zeros(1), torch.ones(1))",
    "route-builtins": "import builtins\nbuiltins.sorted = lambda values, **k: []\nreturn sorted([1]) == []",
    "route-process": "ctx = torch.cuda.tunable.mp.get_context('fork')\np = ctx.Process(target=print)\np.start()\n"
    "p.join()\nreturn p.exitcode == 0",
    "route-thread": "pool = torch.cuda.tunable.concurrent.futures.ThreadPoolExecutor(1)\n"
    "return pool.submit(lambda: 1).result() == 1",
    "route-shell": "return torch.cuda.tunable.mp.util.spawnv_passfds(b'/bin/sh', [b'sh', b'-c', b'exit 0'], ()) > 0",
    "route-kernel": "lib = torch.library.Library('spy49', 'DEF')\nlib.define('f(Tensor x) -> Tensor')\n"
    "lib.impl('f', lambda x: x * 2, 'CompositeExplicitAutograd')\n"
    "return torch.ops.spy49.f(torch.ones(1)).item() == 2",
    "route-finaliser": "Spy = type('Spy', (), {'__del__': lambda self: None})\nreturn Spy()",
    "route-traceback-frames": "try:\n    1 / 0\nexcept ZeroDivisionError as err:\n    f = err.__traceback__.tb_frame\n"
    + FRAME_WALK,
    "route-torch-sys-frames": "f = torch.sys._getframe(0)\n" + FRAME_WALK,
    "route-rebuilt-function": "f = lambda m: m.qqq\ng = type(f)(f.__code__.replace(co_names=('__globals__',)), {})\n"
    "return g(_route)",
    "route-runtime-dunder": "name = '_' * 2 + 'del' + '_' * 2\nreturn type(type(0))('Spy', (), {name: print})()",
}
# The later outsiders' routes (each refused by name in tests/test_vetting.py): one submission that holds them
# all, graded end to end, earns nothing.
LATER_ROUTES = {
    # a function whose parameter is named self reads any private attribute the cell also stores; typing turns
    # a subscript's string into a ForwardRef, whose _evaluate runs it
    "route-forward-ref": "import typing\ndef grab(self, g):\n    return self._evaluate(g, dict(), frozenset())\n"
    "def unused(self):\n    self._evaluate = None\ng = {}\n"
    "grab(typing.get_args(typing.Optional[\"[exec('up = 1'), int][1]\"])[0], g)\nreturn g.get('up') == 1",
    "route-private-module": "import warnings\nm = warnings.catch_warnings()._module\nm.filterwarnings = print\n"
    "return True",
    "route-update-wrapper": "import functools, contextlib\ndef grab():\n    pass\n"
    "functools.update_wrapper(grab, contextlib.contextmanager, assigned=(),\n"
    "                         updated=('_' * 2 + 'globals' + '_' * 2,))\nreturn sys.platform == 'linux'",
    "route-storage-type": "try:\n    torch.UntypedStorage(1).type('builtins.exec')\nexcept AttributeError as err:\n"
    "    found = {}\n    err.obj('up = 1', found)\n    return found['up'] == 1",
    "route-formatwarning": "import warnings\nreturn warnings.formatwarning('x', UserWarning, '/etc/hostname', 1) != ''",
    "route-copy-reduce": "import functools, copy\nclass Holder:\n    @functools.cached_property\n"
    "    def slot(self):\n        return lambda *a: (list, ())\n"
    "Holder.slot.attrname = '_' * 2 + 'reduce_ex' + '_' * 2\nh = Holder()\nh.slot\n"
    "return type(copy.copy(h)).__name__ == 'list'",
    "route-match-args": "import collections.abc\nmatch torch:\n    case collections.abc.Hashable(v):\n"
    "        return v is not None",
    "route-dataclass-field": "import dataclasses\n@dataclasses.dataclass\nclass Carrier:\n    x: object = 0\n"
    "dataclasses.fields(Carrier)[0].name = 'x,exec(self.x,dict(me=self))'\n"
    "@dataclasses.dataclass(init=False, repr=False)\nclass Courier(Carrier):\n    pass\n"
    "c = Courier()\nc.x = 'me.up = 1'\nc == c\nreturn c.up == 1",
    "route-foreign-self": "import warnings\nclass C:\n    def __init__(self):\n        self._module = None\n"
    "    def get(self):\n        return self._module\nreturn C.get(warnings.catch_warnings()) is not None",
}
READER_ATTACKS.update({name: _reaching(route) for name, route in ROUTE_ATTACKS.items()})


def _all_of(routes: dict[str, str]) -> str:
    """One route body that tries each of ``routes`` (a function each) and reaches its aim if any does."""
    bodies = "".join(
        f"def _r{i}():\n" + "".join(f"    {line}\n" for line in route.splitlines())
        for i, route in enumerate(routes.values())
    )
    return bodies + f"return any(f() for f in ({', '.join(f'_r{i}' for i in range(len(routes)))},))"


READER_ATTACKS["route-later-outsiders"] = _reaching(_all_of(LATER_ROUTES))
HUGE_CELL = "x = 1\n" * ((1 << 20) // 6 + 1)  # 1 MiB of plain Python in one solution cell
STUDENT_VISIBLE_LEAKS = ("KeyError", "cases differ", "of 5", "raised", "/tmp/", "/work/", "/root/")


def _added_cell() -> nbformat.NotebookNode:
    """The right code in a cell the student added; the solution cells left blank."""
    nb = _attack("raise NotImplementedError()")
    cell = nbformat.v4.new_code_cell(
        "def scale(t, factor):\n    return t * factor\n\ndef relu_grad(x):\n    return (x > 0).to(x.dtype)\n"
    )
    cell.pop("id")  # the fixture is nbformat 4.4, which has no cell ids
    nb.cells.append(cell)
    return nb


def _magics_notebook(size: int = 19 << 20, magics: int = 500) -> nbformat.NotebookNode:
    """A notebook of about ``size`` bytes (under the reader's 20 MiB limit): ``magics`` magic lines in the first
    solution cell."""
    line = "%time x = 1  # " + "y" * (size // magics)
    return _attack("\n".join([line] * magics))


def _copied_test() -> nbformat.NotebookNode:
    """A wrong solution; a test cell emptied in place and an exact copy of it appended at the end."""
    nb = _attack(WRONG)
    test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_scale")
    nb.cells.append(nbformat.from_dict(json.loads(json.dumps(test))))
    test.source = "pass"
    return nb


@pytest.fixture(scope="module")
def vetted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One `labs grade` batch, vetting on, over READER_ATTACKS and an honest student."""
    tmp = tmp_path_factory.mktemp("vetted")
    subs = tmp / "submitted"
    _write(subs, "honest", nbformat.read(LAB, as_version=4))
    for (
        name,
        code,
    ) in READER_ATTACKS.items():  # the two that must run (one exercise per cell) to show their text
        _write(subs, name, _attack(code, split=name in ("exception-channel", "case-count")))
    _write(subs, "added-cell", _added_cell())
    _write(subs, "copied-test", _copied_test())
    _write(subs, "huge-cell", _attack(HUGE_CELL))
    _write(subs, "magics-19mib", _magics_notebook())
    bad = subs / "bad-json" / CHAPTER / "lab_basic.ipynb"
    bad.parent.mkdir(parents=True)
    bad.write_text("{ not json", encoding="utf-8")
    graded = _grade(subs, tmp / "grading", "--timeout", "60")
    graded["bad"] = bad
    for kind in ("csv", "gradescope"):
        proc = labs_here("export", "--format", kind, "--out", str(tmp / kind), "--root", str(graded["root"]))
        assert proc.returncode == 0, proc.stderr
    proc = labs_here(
        "feedback", "--course", str(FIXTURES / "course"), "--chapter", CHAPTER, "--root", str(graded["root"])
    )
    assert proc.returncode == 0, proc.stderr
    graded["exports"] = tmp
    return graded


def test_reader_honest_student_keeps_full_marks(vetted: dict) -> None:
    assert _cells(vetted["grades"]["honest"]) == FULL, vetted["proc"].stdout[-3000:]
    assert not vetted["grades"]["honest"]["flags"]


@pytest.mark.parametrize(
    "attack", [*sorted(READER_ATTACKS), "added-cell", "copied-test", "huge-cell", "magics-19mib"]
)
def test_reader_attack_earns_nothing(vetted: dict, attack: str) -> None:
    grade = vetted["grades"][attack]
    assert _cells(grade) == dict.fromkeys(FULL, 0.0), grade
    assert grade["status"] == "graded", grade


@pytest.mark.parametrize(
    "attack",
    [
        "patch-rules",
        "code-swap",
        "frame-walk",
        "computed-name",
        "thread",
        *sorted(ROUTE_ATTACKS),
        "route-later-outsiders",
        "huge-cell",
        "magics-19mib",
    ],
)
def test_reaching_for_the_grader_is_refused_and_flagged(vetted: dict, attack: str) -> None:
    grade = vetted["grades"][attack]
    assert any(f.startswith("solution cell scale not run: line ") for f in grade["flags"]), grade
    assert "not allowed in graded code" in next(
        c["why"] for c in grade["cells"] if c["grade_id"] == "test_scale"
    )


def test_the_summary_lists_each_refused_submission_with_its_construct(vetted: dict) -> None:
    summary = (vetted["root"] / "reports" / "summary.html").read_text()
    for attack in ("route-class-pattern", "route-process", "huge-cell", "magics-19mib"):
        assert attack in summary, attack
    for construct in ("__globals__", "torch.cuda.tunable", "bytes (graded code may have at most"):
        assert construct in summary, construct


def test_oversized_cells_cost_the_grader_little(vetted: dict) -> None:
    """A 1 MiB cell and a 19 MiB notebook of 500 magics are refused before parsing: the batch, honest
    student included, is graded within the seconds of an ordinary one (no lock, nothing re-tokenised)."""
    assert vetted["seconds"] < 240, vetted["seconds"]
    assert vetted["grades"]["honest"]["seconds"] < 30


def test_added_cells_and_copied_tests_are_flagged(vetted: dict) -> None:
    assert any("cells added by the student, not run" in f for f in vetted["grades"]["added-cell"]["flags"])
    flags = vetted["grades"]["copied-test"]["flags"]
    assert any("test_scale edited" in f for f in flags) and any(
        "test_scale appears more than once" in f for f in flags
    )


@pytest.mark.parametrize("attack", ["exception-channel", "case-count"])
def test_hidden_checks_show_students_fixed_text_only(vetted: dict, attack: str) -> None:
    student = vetted["exports"]
    shown = [
        (student / "gradescope" / attack / CHAPTER / "results.json").read_text(),
        (student / "csv").read_text() if (student / "csv").is_file() else "",
        (vetted["root"] / "feedback" / attack / CHAPTER / "lab_basic.html").read_text(),
    ]
    assert not [leak for text in shown for leak in STUDENT_VISIBLE_LEAKS if leak in text], shown[0]
    hidden = [c for c in vetted["grades"][attack]["cells"] if c["why"].startswith("hidden check")]
    assert hidden and all(c["why"].endswith("' failed") for c in hidden)
    assert any(
        ("KeyError" in c["detail"]) or ("cases differ" in c["detail"]) for c in hidden
    )  # the instructor's


def test_no_host_path_in_anything_a_student_sees(vetted: dict) -> None:
    tmp, root = vetted["exports"], vetted["root"]
    seen = {
        "gradescope": (tmp / "gradescope" / "bad-json" / CHAPTER / "results.json").read_text(),
        "feedback": (root / "feedback" / "bad-json" / CHAPTER / "lab_basic.html").read_text(),
        "csv": (tmp / "csv").read_text(),
    }
    for name, text in seen.items():
        assert not [m for m in (str(tmp), str(Path.home()), "/work/", "/root/", "/tmp/") if m in text], name
    output = json.loads(seen["gradescope"])["output"]
    assert output.startswith("bad file: lab_basic.ipynb: not a notebook (invalid JSON"), output
    assert "bad file: lab_basic.ipynb" in seen["feedback"]
    assert {"honest", "bad-json"} <= {row["student"] for row in csv.DictReader(seen["csv"].splitlines())}


def test_the_instructor_still_sees_the_file(vetted: dict) -> None:
    bad = str(vetted["bad"])
    results = vetted["results"]
    assert {g["student"]: g["error"] for g in results["grades"]}["bad-json"].startswith(
        f"bad file: {bad}: not a notebook"
    )
    assert bad in (vetted["root"] / "reports" / "summary.html").read_text()
    squeezed = "".join(vetted["proc"].stdout.replace("│", " ").split())  # the table may fold a long path
    assert "".join(bad.split()) in squeezed, vetted["proc"].stdout
