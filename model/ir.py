"""The kernel IR: what a ``.pipe`` file (or the Python API) describes.

A kernel is a Python-like body executed by every warp of every CTA of one cluster, the
way a CuTe DSL ``@cute.kernel`` body is: statements at the top level build pipelines and
synchronise, ``RoleBlock`` statements (``with role("mma", warps=[4]):``) are executed
only by the warps (and CTAs) they name, and plain ``if`` statements may branch on the
warp index, the CTA rank or ``is_leader_cta`` just as real kernels do.

Expressions stay symbolic in the IR: pipeline constructors, method calls, layouts and
multicast masks are ``Call``/``Attr`` nodes whose meaning lives in ``model/builtins.py``
and the pipeline classes.  The compiler (``model/compile.py``) specialises the body for
each warp of each CTA and lowers it to instructions of ``model/program.py``.

Every node carries a source location; locations do not take part in equality, so an IR
built through the Python API equals the parsed one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union


@dataclass(frozen=True)
class Loc:
    """A source position (1-based line and column)."""

    file: str = "<api>"
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


NOLOC = Loc()


def _loc() -> Any:
    return field(default=NOLOC, compare=False, repr=False)


# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Const:
    value: Union[int, bool, str, None]
    loc: Loc = _loc()


@dataclass(frozen=True)
class Name:
    id: str
    loc: Loc = _loc()


@dataclass(frozen=True)
class Attr:
    obj: "Expr"
    name: str
    loc: Loc = _loc()


@dataclass(frozen=True)
class Call:
    func: "Expr"
    args: tuple["Expr", ...] = ()
    kwargs: tuple[tuple[str, "Expr"], ...] = ()
    loc: Loc = _loc()


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * // % / << >> & | ^
    left: "Expr"
    right: "Expr"
    loc: Loc = _loc()


@dataclass(frozen=True)
class UnaryOp:
    op: str  # - + not ~
    operand: "Expr"
    loc: Loc = _loc()


@dataclass(frozen=True)
class Compare:
    op: str  # == != < <= > >= in not in
    left: "Expr"
    right: "Expr"
    loc: Loc = _loc()


@dataclass(frozen=True)
class BoolOp:
    op: str  # and / or
    values: tuple["Expr", ...]
    loc: Loc = _loc()


@dataclass(frozen=True)
class IfExp:
    cond: "Expr"
    then: "Expr"
    orelse: "Expr"
    loc: Loc = _loc()


@dataclass(frozen=True)
class TupleExpr:
    elts: tuple["Expr", ...]
    loc: Loc = _loc()


@dataclass(frozen=True)
class ListExpr:
    elts: tuple["Expr", ...]
    loc: Loc = _loc()


@dataclass(frozen=True)
class Subscript:
    obj: "Expr"
    index: "Expr"
    loc: Loc = _loc()


Expr = Union[Const, Name, Attr, Call, BinOp, UnaryOp, Compare, BoolOp, IfExp, TupleExpr,
             ListExpr, Subscript]


# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Assign:
    """``a = e`` or ``a, b = e`` (targets are names; ``_`` discards)."""

    targets: tuple[str, ...]
    value: Expr
    unpack: bool = False
    loc: Loc = _loc()


@dataclass(frozen=True)
class AugAssign:
    target: str
    op: str
    value: Expr
    loc: Loc = _loc()


@dataclass(frozen=True)
class ExprStmt:
    expr: Expr
    loc: Loc = _loc()


@dataclass(frozen=True)
class For:
    """``for var in range(start, stop, step):`` (the only iterable the language has).

    ``constexpr``: ``cutlass.range_constexpr(...)``, unrolled while the DSL traces the
    kernel, so Python objects carry their state from one iteration to the next; a plain
    ``range``/``cutlass.range`` is a run-time loop (``scf.for``) whose body the DSL traces
    once (``model/compile.py`` ``_Flow`` says what that means for PipelineOrder)."""

    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple["Stmt", ...]
    loc: Loc = _loc()
    constexpr: bool = False


@dataclass(frozen=True)
class While:
    cond: Expr
    body: tuple["Stmt", ...]
    loc: Loc = _loc()


@dataclass(frozen=True)
class If:
    cond: Expr
    body: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...] = ()
    loc: Loc = _loc()


@dataclass(frozen=True)
class With:
    """``with elect_one():`` and other context managers other than ``role``."""

    ctx: Expr
    body: tuple["Stmt", ...]
    loc: Loc = _loc()


@dataclass(frozen=True)
class RoleBlock:
    """``with role("name", warps=[...], ctas=[...]):`` -- a warp-specialised role."""

    name: str
    warps: Expr
    ctas: Optional[Expr]
    body: tuple["Stmt", ...]
    loc: Loc = _loc()


@dataclass(frozen=True)
class Pass:
    loc: Loc = _loc()


@dataclass(frozen=True)
class Break:
    loc: Loc = _loc()


@dataclass(frozen=True)
class Continue:
    loc: Loc = _loc()


@dataclass(frozen=True)
class Return:
    """Leave the kernel body: the warp exits."""

    loc: Loc = _loc()


Stmt = Union[Assign, AugAssign, ExprStmt, For, While, If, With, RoleBlock, Pass, Break,
             Continue, Return]


@dataclass(frozen=True)
class Param:
    name: str
    default: Optional[Expr]
    loc: Loc = _loc()


@dataclass(frozen=True)
class Kernel:
    """A kernel skeleton: parameters and a body run by every warp of every CTA.

    ``launch(block=..., cluster=...)`` in the body gives the block size and cluster
    shape; the compiler reads it before anything else runs.
    """

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    loc: Loc = _loc()
    source: str = field(default="", compare=False, repr=False)


def walk_exprs(node: Any):
    """Yield every expression node below ``node`` (statements and expressions)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, tuple):
            stack.extend(n)
            continue
        if not hasattr(n, "__dataclass_fields__"):
            continue
        if isinstance(n, (Const, Name, Attr, Call, BinOp, UnaryOp, Compare, BoolOp, IfExp,
                          TupleExpr, ListExpr, Subscript)):
            yield n
        for f in n.__dataclass_fields__:
            if f == "loc":
                continue
            v = getattr(n, f)
            if isinstance(v, (tuple, list)) or hasattr(v, "__dataclass_fields__"):
                stack.append(v if not isinstance(v, list) else tuple(v))
            elif isinstance(v, tuple):
                stack.append(v)
