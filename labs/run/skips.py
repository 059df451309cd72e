"""What a notebook run did not execute, decided from what ran, never from how long it took.

A cell skips only through ``labutils.cuda_only``, which prints ``SKIPPED on <device>: <why>``;
``declared`` reads those lines back from an executed notebook. ``undeclared_branches`` is the
lint side: an ``if`` on CUDA with no ``else`` that is not ``cuda_only`` runs nothing on a CPU
machine, and says nothing, so it is refused.
"""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass

from nbformat import NotebookNode

SKIP_LINE = re.compile(r"^SKIPPED on (?P<device>\w+): (?P<why>.+)$", re.M)
PARAMETERS_TAG = "injected-parameters"


@dataclass(frozen=True)
class Skip:
    """A cell of an executed notebook that declared it did not run its experiment, and why."""

    cell: int
    why: str

    def to_dict(self) -> dict:
        return asdict(self)


def _text(output: NotebookNode) -> str:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    return output.get("data", {}).get("text/plain", "") if "data" in output else ""


def declared(nb: NotebookNode) -> list[Skip]:
    """The declared skips of an executed notebook, with source cell indices (papermill's cell left out)."""
    found, index = [], 0
    for cell in nb.cells:
        if PARAMETERS_TAG in cell.metadata.get("tags", []):
            continue
        if cell.cell_type == "code":
            text = "".join(_text(o) for o in cell.get("outputs", []))
            found += [Skip(index, m["why"].strip()) for m in SKIP_LINE.finditer(text)]
        index += 1
    return found


def _mentions_cuda(test: ast.expr) -> bool:
    """``torch.cuda.is_available()``, ``x == "cuda"``, ``t.is_cuda``, ``d.type == "cuda"``, not negated."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return False
    if isinstance(test, ast.BoolOp):
        return any(_mentions_cuda(v) for v in test.values)
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute) and node.attr in {"is_available", "is_cuda"}:
            return True
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.ops[0], ast.Eq | ast.Is)
            and any(isinstance(c, ast.Constant) and c.value == "cuda" for c in [node.left, *node.comparators])
        ):
            return True
    return False


def _calls_cuda_only(test: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "cuda_only"
        for n in ast.walk(test)
    )


def undeclared_branches(source: str) -> list[int]:
    """Lines of ``if <on CUDA>:`` blocks with no ``else`` after which the CPU has no path of its own."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return []
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and not node.orelse
        and not _calls_cuda_only(node.test)
        and _mentions_cuda(node.test)
        and not _cpu_goes_on(node.body)
    ]


def _cpu_goes_on(body: list[ast.stmt]) -> bool:
    """One call (``torch.cuda.synchronize()``: CPU needs nothing in its place), or a body that leaves
    (``return``, ``raise``, ``continue``, ``break``): the code after it is the CPU's path."""
    one_call = len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call)
    return one_call or isinstance(body[-1], ast.Return | ast.Raise | ast.Continue | ast.Break)
