"""`labs lint`'s rule "taught before": every torch name a lab's reference solution uses appears in a code
cell of a lesson of the same or an earlier chapter (docs/authoring.md, "Taught before").

Names are read from the AST, never from the text:

- a chain rooted at a torch import (``torch.autograd.Function``, ``nn.Linear``, ``F.relu``, ``Dim`` after
  ``from torch.export import Dim``) is resolved to its full name (``torch.export.Dim``) through the imports
  of the notebook, with ``nn`` and ``F`` meaning ``torch.nn`` and ``torch.nn.functional`` when not imported;
- an attribute or method used on anything else (``handle.remove()``, ``ctx.needs_input_grad``,
  ``loader.generator``) counts by its name when some torch class or object has it and the lab does not
  define it itself (``self.scale = ...``, its own methods);
- an environment variable is a string constant such as ``"TORCH_FR_BUFFER_SIZE"``.

Lessons count by the same reading of every code cell (IPython magics and shell lines left out), plus the
names of environment variables anywhere in a code cell's text. The rule applies to labs in a chapter
folder numbered ``NN_topic``; the chapters before a lab are the folders beside it with a lower number.
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from nbformat import NotebookNode

from graders.coursedir import SOLUTION_REGION, is_lab, nbgrader_meta
from labs.lint_rules import Problem
from labs.notebooks import BadInput, read

AUTHORING = Path(__file__).resolve().parents[1] / "docs" / "authoring.md"
BASICS_MARKER = "<!-- taught-before basics -->"
CHAPTER = re.compile(r"^(\d+)_\w+$")
ENV_VAR = re.compile(
    r"\b(?:(?:PYTORCH|TORCH\w*|NCCL|GLOO|CUBLAS|CUDA|CUDNN|OMP|MASTER)_[A-Z0-9_]+"
    r"|WORLD_SIZE|LOCAL_WORLD_SIZE|LOCAL_RANK|RANK)\b"
)
DEFAULT_ALIASES = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional"}
# Where torch's names are read from: every public name of these modules and every attribute of their classes,
# plus the attributes objects get in __init__ (a DataLoader's generator, a layer's weight).
VOCABULARY_MODULES = (
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.utils",
    "torch.nn.parallel",
    "torch.nn.attention",
    "torch.autograd",
    "torch.autograd.graph",
    "torch.autograd.function",
    "torch.autograd.forward_ad",
    "torch.optim",
    "torch.optim.lr_scheduler",
    "torch.utils.data",
    "torch.utils.hooks",
    "torch.utils.checkpoint",
    "torch.export",
    "torch.fx",
    "torch.func",
    "torch.library",
    "torch.compiler",
    "torch.amp",
    "torch.cuda",
    "torch.profiler",
    "torch.testing",
    "torch.onnx",
    "torch.distributed",
    "torch.distributed.tensor",
    "torch.distributed.fsdp",
    "torch.distributed.checkpoint",
    "torch.distributed.device_mesh",
)


@dataclass
class Names:
    """The torch names a piece of code uses: full names, attribute names, environment variables."""

    qualified: set[str] = field(default_factory=set)
    attributes: set[str] = field(default_factory=set)
    env_vars: set[str] = field(default_factory=set)

    def update(self, other: Names) -> None:
        self.qualified |= other.qualified
        self.attributes |= other.attributes
        self.env_vars |= other.env_vars

    def shows(self, name: str) -> bool:
        """Whether this code shows ``name`` (``.attr``, ``torch.x.y`` or an environment variable)."""
        if name.startswith("."):
            return name[1:] in self.attributes
        return name in self.qualified or name in self.env_vars


def parse_cell(source: str) -> ast.Module | None:
    """A code cell as Python, IPython magics and shell lines blanked (line numbers kept); None if it does not parse."""
    lines = [
        "" if line.lstrip().startswith(("%", "!")) else line for line in textwrap.dedent(source).splitlines()
    ]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def imports(trees: Iterable[ast.Module]) -> tuple[dict[str, str], set[str]]:
    """``(torch aliases, other module names)``: what each imported name stands for when it is torch's
    (``{"F": "torch.nn.functional", "Dim": "torch.export.Dim"}``), and the names bound to anything else."""
    aliases, others = dict(DEFAULT_ALIASES), set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    bound, target = (
                        (a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0])
                    )
                    if target.split(".")[0] == "torch":
                        aliases[bound] = target
                    else:
                        others.add(bound)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    bound = a.asname or a.name
                    if node.module.split(".")[0] == "torch":
                        aliases[bound] = f"{node.module}.{a.name}"
                    else:
                        others.add(bound)
    for name in others & set(DEFAULT_ALIASES):
        if aliases.get(name) == DEFAULT_ALIASES[name] and name != "torch":
            del aliases[name]  # `F` bound to something else
    return aliases, others


def _chain(node: ast.expr) -> tuple[str, list[str]] | None:
    """``(root name, [attr, ...])`` of ``a.b.c``; None when the root is not a plain name."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return (node.id, attrs[::-1]) if isinstance(node, ast.Name) else None


def _inner_attributes(tree: ast.AST) -> set[int]:
    """ids of Attribute nodes that are the ``value`` of another Attribute (part of a longer chain)."""
    return {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)
    }


def names_used(
    tree: ast.AST,
    aliases: dict[str, str],
    others: set[str],
    vocabulary: frozenset[str],
    lines: range | None = None,
) -> Names:
    """The torch names ``tree`` uses (only nodes starting on ``lines``, when given)."""
    found = Names()
    inner = _inner_attributes(tree)
    for node in ast.walk(tree):
        if lines is not None and getattr(node, "lineno", None) not in lines:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.env_vars |= {
                m.group() for m in ENV_VAR.finditer(node.value) if m.group() == node.value.strip()
            }
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in aliases:
            found.qualified.add(aliases[node.id])
        elif isinstance(node, ast.Attribute) and id(node) not in inner:
            _attribute(node, aliases, others, vocabulary, found)
    return found


def _attribute(
    node: ast.Attribute, aliases: dict[str, str], others: set[str], vocabulary: frozenset[str], found: Names
) -> None:
    chain = _chain(node)
    if chain and chain[0] in aliases:
        full = [aliases[chain[0]], *chain[1]]
        found.qualified |= {".".join(full[:k]) for k in range(1, len(full) + 1)}
        return
    if chain and chain[0] in others:
        return  # math.prod, np.random.default_rng, digits.load: not torch
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        if current.attr in vocabulary and not current.attr.startswith("__"):
            found.attributes.add(current.attr)
        current = current.value


def defined_names(trees: Iterable[ast.Module]) -> set[str]:
    """Attribute, function and class names a notebook defines itself (``self.scale = ...``, ``def step``)."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return names


@lru_cache(maxsize=1)
def torch_vocabulary() -> frozenset[str]:
    """Every attribute name some torch class or common torch object has (imports torch: seconds, once)."""
    import importlib
    import inspect

    import torch

    names: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module_name in VOCABULARY_MODULES:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            for name in dir(module):
                names.add(name)
                value = getattr(module, name, None)
                if inspect.isclass(value):
                    names.update(dir(value))
        weight = torch.nn.Parameter(torch.zeros(1))
        objects = [
            torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(1))),
            torch.nn.Linear(1, 1),
            torch.nn.Conv2d(1, 1, 1),
            torch.nn.BatchNorm1d(1),
            torch.optim.SGD([weight], lr=0.1),
            torch.nn.LSTM(1, 1),
        ]
        names |= {name for obj in objects for name in vars(obj)}
    return frozenset(names)


def basics(authoring: Path = AUTHORING) -> frozenset[str]:
    """The allowlist of docs/authoring.md: names after its marker, in the next fenced block."""
    try:
        text = authoring.read_text(encoding="utf-8")
    except OSError as err:
        raise BadInput(f"{authoring}: cannot read the taught-before basics ({err.strerror})") from None
    _, marker, after = text.partition(BASICS_MARKER)
    block = re.search(r"```[^\n]*\n(.*?)```", after, re.S)
    if not marker or block is None:
        raise BadInput(f"{authoring}: no fenced block after {BASICS_MARKER!r} (the taught-before basics)")
    return frozenset(word for line in block.group(1).splitlines() for word in line.split("#", 1)[0].split())


def _code_trees(nb: NotebookNode) -> list[tuple[int, NotebookNode, ast.Module]]:
    return [
        (i, cell, tree)
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (tree := parse_cell(cell.source)) is not None
    ]


@lru_cache(maxsize=64)
def _lesson_names(path: Path, mtime: float) -> Names:
    try:
        nb = read(path)
    except BadInput:
        return Names()  # reported when that notebook itself is linted
    code = _code_trees(nb)
    aliases, others = imports(tree for _, _, tree in code)
    shown = Names()
    for _, cell, tree in code:
        shown.update(names_used(tree, aliases, others, torch_vocabulary()))
        shown.env_vars |= set(ENV_VAR.findall(cell.source))
        shown.attributes |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    return shown


def chapters_up_to(lab: Path) -> list[Path] | None:
    """The chapter folders beside ``lab``'s numbered no higher than its own; None outside a numbered chapter."""
    number = CHAPTER.match(lab.parent.name)
    if number is None or not lab.parent.parent.is_dir():
        return None
    return sorted(
        p
        for p in lab.parent.parent.iterdir()
        if p.is_dir() and (m := CHAPTER.match(p.name)) and int(m.group(1)) <= int(number.group(1))
    )


def lessons_names(chapters: list[Path]) -> Names:
    """What the lessons of ``chapters`` show, together."""
    shown = Names()
    for chapter in chapters:
        for lesson in sorted(chapter.glob("*.ipynb")):
            if not is_lab(lesson):
                shown.update(_lesson_names(lesson, lesson.stat().st_mtime))
    return shown


def _solution_lines(source: str) -> list[range]:
    """1-based line ranges of the solution regions of a cell (the markers excluded)."""
    return [
        range(source.count("\n", 0, m.start(2)) + 1, source.count("\n", 0, m.end(2)) + 1)
        for m in SOLUTION_REGION.finditer(source)
    ]


def solution_names(nb: NotebookNode) -> Iterator[tuple[int, str, Names]]:
    """``(cell, grade_id, names)`` for each solution cell of a lab: the torch names its regions use."""
    code = _code_trees(nb)
    trees = [tree for _, _, tree in code]
    aliases, others = imports(trees)
    own = defined_names(trees)
    vocabulary = torch_vocabulary() - own
    for i, cell, tree in code:
        if not nbgrader_meta(cell).get("solution"):
            continue
        used = Names()
        for lines in _solution_lines(textwrap.dedent(cell.source)):
            used.update(names_used(tree, aliases, others, vocabulary, lines))
        yield i, str(nbgrader_meta(cell).get("grade_id")), used


def _sorted_names(names: Names) -> list[str]:
    return sorted(names.qualified) + sorted(f".{a}" for a in names.attributes) + sorted(names.env_vars)


def _maximal(qualified: set[str]) -> set[str]:
    """Full names only: ``torch.nn.Linear`` without its prefixes ``torch`` and ``torch.nn``."""
    return {q for q in qualified if not any(other.startswith(q + ".") for other in qualified)}


def taught_before(path: Path, nb: NotebookNode) -> list[Problem]:
    """Each torch name of a lab's reference solutions is shown in a lesson of its chapter or an earlier one."""
    chapters = chapters_up_to(path)
    if chapters is None:
        return []
    shown, allowed = lessons_names(chapters), basics()
    span = f"{chapters[0].name[:2]}..{chapters[-1].name[:2]}"
    problems = []
    for cell, grade_id, used in solution_names(nb):
        used.qualified = _maximal(used.qualified)
        for name in _sorted_names(used):
            if name not in allowed and not shown.shows(name):
                problems.append(
                    Problem(
                        path,
                        cell,
                        f"{path.stem} exercise {grade_id!r}: `{name}` "
                        f"not shown in any lesson of chapters {span}",
                    )
                )
    return problems
