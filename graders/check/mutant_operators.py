"""The mutation operators of :mod:`graders.check.mutants`: each takes one node of a solution's syntax tree and
yields ``(variant, replacement)``, or ``(variant, replacement, node replaced)`` when what it replaces is
a child of the node it looked at; a replacement is a node, or a list of statements for a block's body.

Classic operators (arithmetic, comparisons, booleans, constants and off-by-ones, dropped statements,
swapped arguments) and PyTorch ones (in place and out of place, ``.detach()``, grad modes, dtypes, a
keyword argument dropped for the callee's default, copies dropped, ``view`` and ``reshape``).
"""

from __future__ import annotations

import ast
import copy
import functools
from collections.abc import Callable, Iterator
from typing import TypeVar, cast

Replacement = ast.AST | list[ast.stmt]
Variants = Iterator[tuple]  # (variant, replacement) or (variant, replacement, the node it replaces)

BINOP_SWAPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.MatMult: ast.Mult,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}
ORDERED = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult, ast.LShift, ast.RShift)
COMPARE_SWAPS = {
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
NAME_PAIRS = {
    "min": "max",
    "max": "min",
    "amin": "amax",
    "amax": "amin",
    "argmin": "argmax",
    "argmax": "argmin",
    "any": "all",
    "all": "any",
    "sum": "mean",
    "mean": "sum",
    "floor": "ceil",
    "ceil": "floor",
    "zeros": "ones",
    "ones": "zeros",
    "zeros_like": "ones_like",
    "ones_like": "zeros_like",
    "view": "reshape",
    "reshape": "view",
    "view_as": "reshape_as",
    "reshape_as": "view_as",
}
DTYPE_SWAPS = {
    "int64": "int32",
    "long": "int32",
    "int32": "int64",
    "int": "int64",
    "float64": "float32",
    "double": "float32",
    "float32": "float64",
    "float": "float64",
    "float16": "float32",
    "half": "float32",
    "bfloat16": "float32",
    "bool": "uint8",
    "uint8": "int64",
}
CAST_SWAPS = {"float": "double", "double": "float", "long": "int", "int": "long", "half": "float"}
COPIES = ("clone", "contiguous", "copy")
GRAD_MODES = ("no_grad", "inference_mode", "enable_grad")
MODULES = ("torch", "F", "nn", "np", "numpy", "math")
NOT_TENSORS = ("bool", "int", "float", "tuple", "list", "dict", "len", "str", "set", "sorted")


@functools.cache
def tensor_methods() -> frozenset[str]:
    """Names of ``torch.Tensor``'s attributes (which methods have an in-place twin)."""
    import torch

    return frozenset(dir(torch.Tensor))


Node = TypeVar("Node", bound=ast.AST)


def _copy(node: Node, **fields: object) -> Node:
    new = copy.deepcopy(node)
    for name, value in fields.items():
        setattr(new, name, value)
    return new


def _number(value: float) -> ast.expr:
    """A number as the parser writes it: a negative one is ``-`` applied to a constant."""
    return (
        ast.UnaryOp(ast.USub(), ast.Constant(-value))
        if value < 0 or str(value).startswith("-")
        else ast.Constant(value)
    )


# --- the operators: each yields (variant, replacement) for one node ------------------------------------------


def binop(node: ast.AST) -> Variants:
    """Arithmetic operators (``+`` -> ``-``, ``*`` -> ``/`` ...), in expressions and augmented assignments."""
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in BINOP_SWAPS:
        new = BINOP_SWAPS[type(node.op)]
        yield f"{type(node.op).__name__}>{new.__name__}", _copy(node, op=new())


def swap_operands(node: ast.AST) -> Variants:
    """``a - b`` -> ``b - a`` for the operators whose order matters."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ORDERED):
        yield "swap", _copy(node, left=copy.deepcopy(node.right), right=copy.deepcopy(node.left))


def compare(node: ast.AST) -> Variants:
    """Comparisons: the boundary (``<`` -> ``<=``) and the negation (``<`` -> ``>=``) of each."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            for new in COMPARE_SWAPS.get(type(op), ()):
                ops = [*node.ops[:i], new(), *node.ops[i + 1 :]]
                yield f"{i}:{type(op).__name__}>{new.__name__}", _copy(node, ops=ops)


def boolop(node: ast.AST) -> Variants:
    """``and`` <-> ``or``, and each operand of a boolean dropped."""
    if isinstance(node, ast.BoolOp):
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield f"{type(node.op).__name__}>{new.__name__}", _copy(node, op=new())
        for i in range(len(node.values)):
            rest = [copy.deepcopy(v) for j, v in enumerate(node.values) if j != i]
            yield f"drop{i}", rest[0] if len(rest) == 1 else _copy(node, values=rest)


def unary(node: ast.AST) -> Variants:
    """``-x``, ``not x``, ``~x`` -> ``x``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not, ast.Invert)):
        yield f"drop-{type(node.op).__name__}", copy.deepcopy(node.operand)


def negate(node: ast.AST) -> Variants:
    """The condition of an ``if``, ``while`` or conditional expression negated."""
    if isinstance(node, (ast.If, ast.While, ast.IfExp)) and not (
        isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
    ):
        yield "not", ast.UnaryOp(ast.Not(), copy.deepcopy(node.test)), node.test


def const(node: ast.AST) -> Variants:
    """Numbers: ``k`` -> ``k + 1`` and ``k - 1`` (off-by-ones), a float to 0 (or 1) and to its negative;
    ``True`` <-> ``False``. Strings are left alone (labels, messages)."""
    if not isinstance(node, ast.Constant):
        return
    value = node.value
    if isinstance(value, bool):
        yield f"{value}>{not value}", ast.Constant(not value)
    elif isinstance(value, int):
        yield "+1", _number(value + 1)
        yield "-1", _number(value - 1)
    elif isinstance(value, float):
        yield ("0", ast.Constant(0.0)) if value else ("1", ast.Constant(1.0))
        if value:
            yield "neg", _number(-value)


def index(node: ast.AST) -> Variants:
    """Off-by-one subscripts: ``x[i]`` -> ``x[i + 1]`` and ``x[i - 1]`` (a constant index is ``const``'s)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, (ast.Name, ast.BinOp, ast.Attribute)):
        for op, name in ((ast.Add, "+1"), (ast.Sub, "-1")):
            yield name, _copy(node, slice=ast.BinOp(copy.deepcopy(node.slice), op(), ast.Constant(1)))


def swap_args(node: ast.AST) -> Variants:
    """Neighbouring positional arguments of a call swapped."""
    if isinstance(node, ast.Call):
        for i in range(len(node.args) - 1):
            if not any(isinstance(a, ast.Starred) for a in node.args[i : i + 2]):
                args = [copy.deepcopy(a) for a in node.args]
                args[i], args[i + 1] = args[i + 1], args[i]
                yield f"{i}<>{i + 1}", _copy(node, args=args)


def kwarg(node: ast.AST) -> Variants:
    """A keyword argument dropped: the callee's default instead (``dtype=``, ``dim=``, ``create_graph=`` ...)."""
    if isinstance(node, ast.Call):
        for i, keyword in enumerate(node.keywords):
            if keyword.arg is not None:
                yield (
                    f"drop-{keyword.arg}",
                    _copy(node, keywords=[k for j, k in enumerate(node.keywords) if j != i]),
                )


def _method(node: ast.AST) -> str | None:
    """The method name of a call ``obj.name(...)`` on something that is not a module (None otherwise)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    receiver = node.func.value
    while isinstance(receiver, ast.Attribute):
        receiver = receiver.value
    return None if isinstance(receiver, ast.Name) and receiver.id in MODULES else node.func.attr


def rename(node: ast.AST) -> Variants:
    """A function swapped for its twin: min/max, any/all, sum/mean, floor/ceil, zeros/ones, view/reshape."""
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        if name in NAME_PAIRS:
            func = _copy(
                node.func,
                **(
                    {"id": NAME_PAIRS[name]}
                    if isinstance(node.func, ast.Name)
                    else {"attr": NAME_PAIRS[name]}
                ),
            )
            yield f"{name}>{NAME_PAIRS[name]}", _copy(node, func=func)


def inplace(node: ast.AST) -> Variants:
    """``x.add_(y)`` <-> ``x.add(y)`` for each Tensor method with an in-place twin."""
    name = _method(node)
    if not name or name.startswith("_"):
        return
    methods = tensor_methods()
    twin = name[:-1] if name.endswith("_") else name + "_"
    if twin in methods and (name in methods or name.endswith("_")):
        call = cast(ast.Call, node)  # _method found a method call
        yield f"{name}>{twin}", _copy(call, func=_copy(call.func, attr=twin))


def augassign(node: ast.AST) -> Variants:
    """``x += y`` <-> ``x = x + y`` (in place and out of place for tensors)."""
    if isinstance(node, ast.AugAssign):
        target = _copy(node.target, ctx=ast.Load())
        new = ast.Assign(
            [copy.deepcopy(node.target)], ast.BinOp(target, node.op, node.value), type_comment=None
        )
        yield "aug>assign", ast.copy_location(new, node)
    elif (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.value, ast.BinOp)
        and ast.dump(node.targets[0]) == ast.dump(_copy(node.value.left, ctx=ast.Store()))
    ):
        target = cast(
            ast.Name | ast.Attribute | ast.Subscript, copy.deepcopy(node.targets[0])
        )  # it was stored to
        yield "assign>aug", ast.AugAssign(target, node.value.op, copy.deepcopy(node.value.right))


def detach(node: ast.AST) -> Variants:
    """``x.detach()`` -> ``x``; ``return e`` -> ``return e.detach()`` where ``e`` may be a tensor."""
    if _method(node) == "detach" and not cast(ast.Call, node).args:
        yield "drop", copy.deepcopy(cast(ast.Attribute, cast(ast.Call, node).func).value)
    elif isinstance(node, ast.Return) and node.value is not None and _may_be_tensor(node.value):
        call = ast.Call(ast.Attribute(copy.deepcopy(node.value), "detach", ast.Load()), [], [])
        yield "add", ast.Return(call)


def _may_be_tensor(node: ast.AST | None) -> bool:
    if node is None or isinstance(
        node,
        (
            ast.Constant,
            ast.Tuple,
            ast.List,
            ast.Dict,
            ast.Set,
            ast.Compare,
            ast.BoolOp,
            ast.ListComp,
            ast.DictComp,
            ast.SetComp,
            ast.GeneratorExp,
        ),
    ):
        return False
    return not (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in NOT_TENSORS
    )


def copies(node: ast.AST) -> Variants:
    """``x.clone()``, ``x.contiguous()`` -> ``x``: a copy dropped."""
    name = _method(node)
    call = cast(ast.Call, node)  # when name is set: _method found a method call
    if name in COPIES and not call.args and not call.keywords:
        yield f"drop-{name}", copy.deepcopy(cast(ast.Attribute, call.func).value)


def dtype(node: ast.AST) -> Variants:
    """``torch.int64`` -> ``torch.int32``, ``torch.float64`` -> ``torch.float32`` ...; ``.float()`` <-> ``.double()``."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "torch"
        and node.attr in DTYPE_SWAPS
    ):
        yield f"{node.attr}>{DTYPE_SWAPS[node.attr]}", _copy(node, attr=DTYPE_SWAPS[node.attr])
    name = _method(node)
    call = cast(ast.Call, node)  # when name is set: _method found a method call
    if name in CAST_SWAPS and not call.args:
        yield f"{name}>{CAST_SWAPS[name]}", _copy(call, func=_copy(call.func, attr=CAST_SWAPS[name]))


def grad_mode(node: ast.AST) -> Variants:
    """``with torch.no_grad():`` (or another grad mode) removed: its body runs on its own."""
    if isinstance(node, ast.With):
        for i, item in enumerate(node.items):
            call = item.context_expr
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in GRAD_MODES
            ):
                rest = [copy.deepcopy(x) for j, x in enumerate(node.items) if j != i]
                yield (
                    f"drop-{call.func.attr}",
                    _copy(node, items=rest) if rest else [copy.deepcopy(s) for s in node.body],
                )


def drop(node: ast.AST) -> Variants:
    """A statement dropped (``pass`` in its place)."""
    if isinstance(node, ast.stmt) and not isinstance(node, ast.Pass):
        yield "pass", ast.Pass()


OPERATORS: tuple[tuple[str, Callable[[ast.AST], Variants]], ...] = (
    ("drop", drop),
    ("augassign", augassign),
    ("grad_mode", grad_mode),
    ("negate", negate),
    ("detach", detach),
    ("binop", binop),
    ("swap_operands", swap_operands),
    ("compare", compare),
    ("boolop", boolop),
    ("unary", unary),
    ("const", const),
    ("index", index),
    ("swap_args", swap_args),
    ("kwarg", kwarg),
    ("rename", rename),
    ("inplace", inplace),
    ("copies", copies),
    ("dtype", dtype),
)
