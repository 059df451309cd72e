"""The project's import graph, read from the source (ast): four packages in layers, no cycle anywhere.

labutils is what student notebooks import; graders (the grading side) and labs (the `labs` command) sit on
top of it and must never be pulled in by it, not even lazily; zygote, the fork core under them all, needs
only the standard library (docs/design.md). ci/ holds scripts, not a package anyone imports.

Every ``import`` statement counts, wherever it is: module level, inside a function (a
function-level import that dodges a circle is still a circle), and under ``if TYPE_CHECKING:``
(a circle a type checker must untangle). ``from labutils.x import name`` is an edge to
``labutils.x.name`` when that is a module, else to ``labutils.x`` itself. Python runs a
package's ``__init__`` before any of its submodules, but that is no edge: a package's face importing
its submodules, which import each other by full name, is the normal pattern (``graphs/``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "labutils"
FORBIDDEN = ("graders", "ci", "labs")  # the grader, the CI scripts, the `labs` command


def module_name(path: Path, root: Path = ROOT) -> str:
    """Dotted module name of a source file (``labutils/memory/__init__.py`` -> ``labutils.memory``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(path: Path, name: str) -> set[str]:
    """What the file imports, anywhere in it, as dotted names (relative imports resolved).

    ``import a.b`` gives ``a.b``; ``from a.b import c, d`` gives ``a.b.c`` and ``a.b.d`` (a
    submodule or a name defined in ``a.b``: :func:`import_graph` tells them apart).
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.update(target if alias.name == "*" else f"{target}.{alias.name}" for alias in node.names)
    return found


def import_graph(
    package: str = PACKAGE, root: Path = ROOT
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(edges among the package's modules, every dotted name each module imports).

    An imported name's edge goes to the longest prefix that is one of the package's modules:
    ``labutils.memory.records.MIB`` -> ``labutils.memory.records``, ``labutils.memory.MIB`` ->
    ``labutils.memory`` (its ``__init__``, a circle if that imports the importer back).
    """
    files = {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    raw: dict[str, set[str]] = {}
    for name, path in files.items():
        raw[name] = imported_names(path, name)
        edges = set()
        for target in raw[name]:
            parts = target.split(".")
            while parts and ".".join(parts) not in files:
                parts.pop()
            if parts:
                edges.add(".".join(parts))
        graph[name] = edges
    return graph, raw


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_the_checker_sees_a_type_checking_and_a_function_level_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.a import f\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
        "def f():\n    return 1\n"
    )
    (pkg / "b.py").write_text("class B:\n    def g(self):\n        from . import c\n")
    (pkg / "c.py").write_text("from .a import f\n")
    (pkg / "d.py").write_text("from pkg import a\n")
    (pkg / "e.py").write_text("import pkg.d\n")
    graph, _ = import_graph("pkg", tmp_path)
    assert graph["pkg.b"] == {"pkg.c"} and graph["pkg.d"] == {"pkg.a"} and graph["pkg.e"] == {"pkg.d"}
    assert find_cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    (pkg / "d.py").write_text("from pkg import f\n")  # a name from the face that imports d's caller
    (pkg / "__init__.py").write_text("from pkg.a import f\nfrom pkg import e\n")
    graph, _ = import_graph("pkg", tmp_path)
    assert ["pkg", "pkg.d", "pkg.e"] in find_cycles(graph)


def test_no_import_cycle_among_labutils_modules() -> None:
    graph, _ = import_graph()
    assert {"labutils.memory.tracker", "labutils.strides.picture"} <= set(graph), "modules not found"
    assert find_cycles(graph) == []


def test_memory_and_strides_import_one_way() -> None:
    """The documented order: each module imports only those before it (the face last)."""
    graph, _ = import_graph()
    orders = [
        ["records", "plot", "timeline", "dispatch", "tracker", "step"],
        ["layout", "plan", "diagrams", "picture"],
    ]
    for package, order in zip(("labutils.memory", "labutils.strides"), orders, strict=True):
        assert {m for m in graph if m.startswith(f"{package}.")} == {f"{package}.{m}" for m in order}
        for k, module in enumerate(order):
            inside = {d for d in graph[f"{package}.{module}"] if d.startswith(package)}
            assert inside <= {f"{package}.{m}" for m in order[:k]}, (module, inside)


def test_labutils_never_imports_graders_or_ci() -> None:
    _, raw = import_graph()
    bad = {name: sorted(t for t in targets if t.split(".")[0] in FORBIDDEN) for name, targets in raw.items()}
    assert {name: targets for name, targets in bad.items() if targets} == {}


# --- the whole project: one house, layered ------------------------------------------------------

PROJECT = ("labutils", "graders", "labs", "zygote")
# Who may import whom: each package only the ones below it (students' code at the bottom, the tool on top).
MAY_IMPORT = {
    "zygote": set(),
    "labutils": {"zygote"},
    "graders": {"labutils", "zygote"},
    "labs": {"graders", "labutils", "zygote"},
}


def project_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    graph: dict[str, set[str]] = {}
    raw: dict[str, set[str]] = {}
    for package in PROJECT:
        edges, names = import_graph(package)
        graph.update(edges)
        raw.update(names)
    modules = set(graph)
    for name, targets in raw.items():  # edges across packages, resolved like those inside one
        for target in targets:
            parts = target.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts:
                graph[name].add(".".join(parts))
    return graph, raw


def test_no_import_cycle_anywhere_in_the_project() -> None:
    graph, _ = project_graph()
    assert {"labs.cli", "graders.pipeline", "zygote.server", "labutils.launch.zygote"} <= set(graph)
    assert find_cycles(graph) == []


def test_each_package_imports_only_the_ones_below_it() -> None:
    _, raw = project_graph()
    bad = {}
    for name, targets in raw.items():
        own = name.split(".")[0]
        wrong = sorted(
            t
            for t in targets
            if t.split(".")[0] in PROJECT and t.split(".")[0] not in {own, *MAY_IMPORT[own]}
        )
        if wrong:
            bad[name] = wrong
    assert bad == {}


def test_the_zygote_core_needs_only_the_standard_library() -> None:
    import sys

    _, raw = import_graph("zygote")
    outside = {
        n: sorted(t for t in ts if t.split(".")[0] not in {*sys.stdlib_module_names, "zygote", "__future__"})
        for n, ts in raw.items()
    }
    assert {n: ts for n, ts in outside.items() if ts} == {}


def test_os_fork_is_called_in_the_zygote_core_only() -> None:
    calls = []
    for path in sorted(p for package in (*PROJECT, "benchmarks") for p in (ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("fork", "forkpty")
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
            ):
                calls.append(path.relative_to(ROOT).as_posix())
    assert calls == ["zygote/server.py"]


def parse_callers(root: Path = ROOT) -> list[str]:
    """Grader modules that call ``ast.parse`` themselves (graders/grader/parsing.py is the one that may)."""
    return sorted(
        {
            path.relative_to(root).as_posix()
            for path in (root / "graders").rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
            if isinstance(node, ast.Attribute)
            and node.attr == "parse"
            and isinstance(node.value, ast.Name)
            and node.value.id == "ast"
        }
    )


def test_the_grader_parses_python_in_one_place_only() -> None:
    """Grading runs in threads, where CPython 3.11's ``ast.parse`` can fail by chance: graders/grader/parsing.py locks."""
    assert parse_callers() == ["graders/grader/parsing.py"]


def test_the_parse_rule_sees_a_stray_parse(tmp_path: Path) -> None:
    (tmp_path / "graders").mkdir()
    (tmp_path / "graders" / "grader").mkdir()
    (tmp_path / "graders" / "grader" / "parsing.py").write_text("import ast\ntree = ast.parse('x')\n")
    (tmp_path / "graders" / "stray.py").write_text("import ast\ndef f(s):\n    return ast.parse(s)\n")
    assert parse_callers(tmp_path) == ["graders/grader/parsing.py", "graders/stray.py"]


# --- graders/: cut where trust ends ---------------------------------------------------------------

# Each folder of graders/ and what it may import of graders/ (besides itself); the two top-level modules hold
# facts every side may read (the course's layout, default paths). inside/ runs in the student's sandbox: it never
# imports the grader, and the sandbox binds only inside/ and boundary/ of graders/ (worker.SANDBOX_GRADERS), so
# nothing the sandbox runs can import the code that decides points; boundary/ (the protocol and the wire format)
# imports nothing of graders/ at all.
GRADER_LAYERS = {
    "boundary": set(),
    "inside": {"boundary"},
    "grader": {"inside", "boundary", "coursedir", "paths"},
    "nbgrader": {"grader", "inside", "boundary", "coursedir", "paths"},
    "check": {"grader", "inside", "boundary", "nbgrader", "coursedir", "paths"},
    "coursedir": set(),
    "paths": set(),
    "pipeline": {"grader", "inside", "boundary", "nbgrader", "coursedir", "paths"},
}


def grader_layer_breaks(raw: dict[str, set[str]]) -> dict[str, list[str]]:
    """Imports of ``graders.*`` modules that cross the cut the wrong way: ``{module: [targets]}``."""
    bad = {}
    for name, targets in raw.items():
        if not name.startswith("graders.") or name == "graders.__init__":
            continue
        own = name.split(".")[1]
        allowed = {own, *GRADER_LAYERS[own]}
        wrong = sorted(t for t in targets if t.startswith("graders.") and t.split(".")[1] not in allowed)
        if wrong:
            bad[name] = wrong
    return bad


def test_graders_is_cut_into_the_five_folders_and_two_facts() -> None:
    top = {
        p.name.removesuffix(".py")
        for p in (ROOT / "graders").iterdir()
        if p.name != "__pycache__" and p.name != "__init__.py"
    }
    assert top == set(GRADER_LAYERS)


def test_each_side_of_graders_imports_only_what_its_trust_allows() -> None:
    _, raw = project_graph()
    assert grader_layer_breaks(raw) == {}


def test_the_layer_rule_sees_the_sandbox_reaching_into_the_grader() -> None:
    raw = {
        "graders.inside.job": {"graders.boundary.wire", "graders.grader.compare"},
        "graders.boundary.wire": {"graders.coursedir"},
        "graders.grader.grading": {"graders.inside.job"},
    }
    assert grader_layer_breaks(raw) == {
        "graders.inside.job": ["graders.grader.compare"],
        "graders.boundary.wire": ["graders.coursedir"],
    }


def test_the_sandbox_imports_nothing_of_the_grader_even_lazily() -> None:
    """Whatever a module of inside/ imports, at its top or in a function, stays inside/ or boundary/ (and the
    standard library or installed packages): checked on every import statement of the tree, not only the top's."""
    for path in sorted((ROOT / "graders" / "inside").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for target in names:
                assert not target.startswith("graders.") or target.split(".")[1] in ("inside", "boundary"), (
                    path.name,
                    target,
                )
                assert target.split(".")[0] != "labs", (path.name, target)


def test_the_sandbox_binds_what_inside_imports_and_no_more_of_graders() -> None:
    """The sandbox binds only the parts of graders/ its side runs (worker.SANDBOX_GRADERS): everything inside/
    imports, however indirectly, is among them, and the grader, its adapters and checks are not."""
    from graders.check.closure import closure
    from graders.grader.sandbox.worker import SANDBOX_GRADERS

    needed = closure(sorted((ROOT / "graders" / "inside").rglob("*.py")))
    bound = tuple(f"graders/{part}" for part in SANDBOX_GRADERS)
    outside = [f for f in needed if f.startswith("graders/") and not f.startswith(bound)]
    assert not outside, f"inside/ imports what the sandbox does not bind: {outside}"
    assert not {"grader", "nbgrader", "check", "pipeline.py", "coursedir.py"} & set(SANDBOX_GRADERS)


# What comes back from a sandbox is parsed in boundary/ only: elsewhere no module reads the wire format or calls
# a parser of the supervisor's messages; they get boundary.job_result's typed values.
BOUNDARY_PARSERS = {"from_message", "from_wire", "cell_runs", "values_in", "read_message", "job_result"}


def _absolute(node: ast.ImportFrom, path: Path, root: Path) -> str:
    """The module an ``ImportFrom`` names, a relative one resolved against ``path``'s package."""
    if not node.level:
        return node.module or ""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def sandbox_output_parsers(root: Path = ROOT) -> list[str]:
    """Where a module of graders/ outside boundary/ and inside/ reads sandbox output itself."""
    found = []
    for path in sorted((root / "graders").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if path.relative_to(root / "graders").parts[0] in ("boundary", "inside"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            module = _absolute(node, path, root) if isinstance(node, ast.ImportFrom) else ""
            if isinstance(node, ast.ImportFrom) and (
                module == "graders.boundary.wire"
                or (module == "graders.boundary" and any(a.name == "wire" for a in node.names))
            ):
                found.append(f"{relative}: imports the wire format")
            elif isinstance(node, ast.Import) and any(a.name == "graders.boundary.wire" for a in node.names):
                found.append(f"{relative}: imports the wire format")
            elif isinstance(node, ast.Attribute) and node.attr in BOUNDARY_PARSERS:
                found.append(f"{relative}: .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and module == "graders.boundary.job_result":
                found += [f"{relative}: {a.name}" for a in node.names if a.name in BOUNDARY_PARSERS]
    return found


def string_and_bare_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """What modules of graders/ import by a string (``importlib.import_module("graders.x")``, ``__import__``),
    relatively, or as the bare package (``import graders``, then ``graders.grader.x``): ``{module: {targets}}``,
    for :func:`grader_layer_breaks` (the bare package counts as every side of it)."""
    found: dict[str, set[str]] = {}
    for path in sorted((root / "graders").rglob("*.py")):
        name = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                    targets.append(node.args[0].value)
            elif isinstance(node, ast.ImportFrom) and node.level:
                module = _absolute(node, path, root)
                targets += [module, *(f"{module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import) and any(a.name == "graders" for a in node.names):
                targets += [f"graders.{side}" for side in GRADER_LAYERS]
            found.setdefault(name, set()).update(t for t in targets if t.startswith("graders."))
    return {name: targets for name, targets in found.items() if targets}


def test_no_import_by_string_relatively_or_of_the_bare_package_crosses_the_cut() -> None:
    assert grader_layer_breaks(string_and_bare_imports()) == {}


def test_the_cut_sees_imports_by_string_relative_and_bare(tmp_path: Path) -> None:
    inside = tmp_path / "graders" / "inside"
    inside.mkdir(parents=True)
    (inside / "a.py").write_text("import importlib\nm = importlib.import_module('graders.grader.compare')\n")
    (inside / "b.py").write_text("from ..grader import compare\n")
    (inside / "c.py").write_text("import graders\n")
    (inside / "d.py").write_text("from ..boundary import wire\nimport json\n")
    assert grader_layer_breaks(string_and_bare_imports(tmp_path)) == {
        "graders.inside.a": ["graders.grader.compare"],
        "graders.inside.b": ["graders.grader", "graders.grader.compare"],
        "graders.inside.c": sorted(f"graders.{s}" for s in GRADER_LAYERS if s not in ("inside", "boundary")),
    }
    grader = tmp_path / "graders" / "grader"
    grader.mkdir()
    (grader / "e.py").write_text("from ..boundary import wire\nfrom ..boundary.job_result import cell_runs\n")
    assert sandbox_output_parsers(tmp_path) == [
        "graders/grader/e.py: imports the wire format",
        "graders/grader/e.py: cell_runs",
    ]


def test_only_the_boundary_parses_what_comes_back_from_a_sandbox() -> None:
    assert sandbox_output_parsers() == []


def test_the_boundary_rule_sees_a_grader_module_decoding_itself(tmp_path: Path) -> None:
    (tmp_path / "graders" / "grader").mkdir(parents=True)
    (tmp_path / "graders" / "boundary").mkdir()
    (tmp_path / "graders" / "boundary" / "job_result.py").write_text("from graders.boundary import wire\n")
    (tmp_path / "graders" / "grader" / "stray.py").write_text(
        "from graders.boundary import wire\nfrom graders.boundary.job_result import cell_runs\n"
        "def f(m):\n    return DoneHeader.from_message(m)\n"
    )
    assert sandbox_output_parsers(tmp_path) == [
        "graders/grader/stray.py: imports the wire format",
        "graders/grader/stray.py: cell_runs",
        "graders/grader/stray.py: .from_message",
    ]
