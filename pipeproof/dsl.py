"""Write pipeproof kernels in Python, with ``cutlass.pipeline``'s names and signatures.

    from pipeproof import (Agent, CooperativeGroup, PipelineTmaAsync, check, cute,
                           launch, read, role, tma_load)

    @cute.kernel
    def mainloop(stages: int = 4, k_tiles: int = 8):
        launch(block=384, cluster=(1, 1, 1))
        ab = PipelineTmaAsync.create(num_stages=stages,
                                     producer_group=CooperativeGroup(Agent.Thread, 1),
                                     consumer_group=CooperativeGroup(Agent.Thread, 8),
                                     tx_count=16384, defer_sync=True)
        ...
        with role("dma", warps=[0]):
            producer, _ = ab.make_participants()
            for k in range(k_tiles):
                handle = producer.acquire_and_advance()
                tma_load(ab, handle, bytes=16384)
            producer.tail()
        ...

    result = check(mainloop, {"stages": 2})
    assert result.status == "PROVEN", result.render_text()

How it works -- the way CuTe DSL itself works: a *preprocessor* rewrites the function's
Python AST so that its control flow and assignments are recorded, and the rewritten
function is then *traced*: it runs once with proxy values (``Sym``) that build kernel IR
expressions (``model/ir.py``) instead of computing.  Every statement that runs is
recorded as the same IR statement the ``.pipe`` parser builds for the same text, so a
kernel written here and the same kernel in a ``.pipe`` file give *equal* IR (locations
are not compared) and the same verdict.

* ``x = e``, ``a, b = e``, ``x += e``, expression statements, ``pass``/``break``/
  ``continue``/``return`` are recorded as ``Assign``/``AugAssign``/``ExprStmt``/...; every
  local becomes a symbolic name, as in ``.pipe``.
* ``for i in range(...)`` (also ``cutlass.range``/``range_dynamic``) is recorded once as
  an ``ir.For`` with a symbolic loop variable; ``while`` likewise.  The model unrolls.
* ``if``/``elif``/``else`` on a traced value records both branches as ``ir.If``; on a
  plain Python value (a closure variable, a global constant) it is decided in Python,
  like ``cutlass.const_expr``.  ``for i in range_constexpr(n)`` (also
  ``cutlass.range_constexpr``) is a Python loop: its body is recorded once per iteration.
* ``with role("dma", warps=[0]):`` and ``with elect_one():`` become ``RoleBlock``/``With``.
* Literals inside the kernel are traced constants (``2 * 4096`` stays ``2 * 4096`` in the
  IR, as in ``.pipe``); values from outside the kernel (globals, closure variables,
  arguments of helpers given plain Python values) enter as constants.
* Calling a plain Python function (a *role function* or helper) from a kernel inlines it:
  its body is preprocessed and traced in place, like a macro.  Its parameters are bound
  to the caller's values (no IR statement); an argument that has side effects (a call)
  is first assigned to the parameter's name.  A helper may ``return`` a value only as its
  last statement.  Decorate a helper with ``@pipeproof.python`` to run it as ordinary
  Python instead (compile-time computation on plain values).
* Method calls on pipelines, participants, handles and states are checked when traced:
  an unknown method (``producer_aquire``) or a wrong argument list is an error at the
  line that made it, with the methods that exist.

Differences from CuTe DSL, on purpose: there is no device code, no tensors and no real
time; data movement is described by the ghost builtins (``tma_load``, ``read``,
``write``, ``tcgen05_mma``...); warp specialisation is written ``with role(name,
warps=[...])`` (an ``if warp_idx == ...`` on ``cute.arch.warp_idx()`` also works, it is
recorded as an ``ir.If`` and evaluated per warp by the model); the kernel's launch
configuration is the ``launch(block=..., cluster=...)`` call; every local is symbolic
(Python-level computation needs plain values from outside the kernel, or
``@pipeproof.python`` helpers); comprehensions, lambdas and f-strings are evaluated in
Python and must not use traced values; ``try``, ``raise``, ``global``, ``del``, nested
classes and ``with ... as`` are not supported inside a kernel.
"""

from __future__ import annotations

import ast
import builtins as _py
import copy
import difflib
import inspect
import linecache
import sys
import sysconfig
import textwrap
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Union

from .model import ir
from .model.builtins import MODULE_ROOTS, builtins_table
from .model.errors import ConfigError
from .model.lang.parser import PY_AST_LOCK, _role_block
from .model.pipelines import registry
from .model.pipelines.named_barrier import NamedBarrier as _NamedBarrierModel
from .model.pipelines.participants import Handle as _HandleModel
from .model.pipelines.participants import PipelineConsumer as _ConsumerModel
from .model.pipelines.participants import PipelineProducer as _ProducerModel


class DslError(ConfigError):
    """A kernel written with the Python API cannot be traced (``file:line:col: error``)."""


# --------------------------------------------------------------------------- kinds

# What a traced value is, when the API knows: used to check method names and signatures
# and to give helpful errors.  ``None``: unknown (anything goes; the model checks later).


@dataclass(frozen=True)
class Kind:
    what: str                       # class | pipeline | producer | consumer | handle | state
    #                                 | enum | module | builtin | tuple | method | named_barrier
    cls: Any = None                 # the model class (pipelines, participants)
    name: str = ""                  # builtin / enum / method / module name
    parts: tuple = ()               # tuple: kinds of the elements; enum: member names


_STATE_METHODS = ("advance", "reverse", "clone", "reset_count")
_STATE_ATTRS = ("index", "phase", "count", "stages")

#: what a method returns (by method name)
_RETURNS: dict[str, Callable[[Kind], Optional[Kind]]] = {
    "make_participants": lambda k: Kind("tuple", parts=(Kind("producer", _ProducerModel),
                                                        Kind("consumer", _ConsumerModel))),
    "make_producer": lambda k: Kind("producer", _ProducerModel),
    "make_consumer": lambda k: Kind("consumer", _ConsumerModel),
    "acquire": lambda k: Kind("handle", _HandleModel),
    "acquire_and_advance": lambda k: Kind("handle", _HandleModel),
    "wait": lambda k: Kind("handle", _HandleModel) if k.what == "consumer" else None,
    "wait_and_advance": lambda k: Kind("handle", _HandleModel),
    "current_handle": lambda k: Kind("handle", _HandleModel),
    "clone": lambda k: k,
}


def _methods_of(cls: Any) -> list[str]:
    return sorted(n[2:] for n in dir(cls) if n.startswith("m_"))


def _check_method(kind: Kind, method: str, args: tuple, kwargs: dict) -> Optional[Kind]:
    """Validate ``obj.method(*args, **kwargs)`` for a known kind; return the result kind."""
    if kind.what == "state":
        if method not in _STATE_METHODS:
            _no_such(f"PipelineState has no method {method!r}", method, _STATE_METHODS)
        if args or kwargs:
            raise DslError(f"PipelineState.{method}() takes no arguments", _loc())
        return kind if method == "clone" else None
    if kind.what in ("pipeline", "producer", "consumer", "handle", "named_barrier"):
        cls = kind.cls
        title = getattr(cls, "CLASS", None) or {"producer": "PipelineProducer",
                                                "consumer": "PipelineConsumer",
                                                "handle": "a pipeline handle"}.get(
                                                    kind.what, cls.__name__)
        fn = getattr(cls, "m_" + method, None)
        if fn is None:
            _no_such(f"{title} has no method {method!r}", method, _methods_of(cls))
        try:
            inspect.signature(fn).bind(None, None, *args, **kwargs)
        except TypeError as e:
            raise DslError(f"{title}.{method}{_user_signature(fn)}: {e}", _loc()) from None
        ret = _RETURNS.get(method)
        return ret(kind) if ret else None
    return None


def _user_signature(fn: Callable[..., Any]) -> str:
    """``(state, try_acquire_token=None)``: a model method's signature as the user calls it
    (without ``self``, the compile context and annotations)."""
    params = list(inspect.signature(fn).parameters.values())[2:]
    return str(inspect.Signature([p.replace(annotation=inspect.Parameter.empty)
                                  for p in params]))


def _no_such(msg: str, name: str, options: Any) -> None:
    close = difflib.get_close_matches(name, list(options), n=3)
    hint = f"did you mean {', '.join(close)}?" if close else \
        f"it has: {', '.join(options)}"
    raise DslError(msg, _loc(), hint)


# --------------------------------------------------------------------------- Sym


class Sym:
    """A traced value: an IR expression plus, where known, what it is."""

    __slots__ = ("_e", "_k")

    def __init__(self, expr: Any, kind: Optional[Kind] = None):
        object.__setattr__(self, "_e", expr)
        object.__setattr__(self, "_k", kind)

    # -- building expressions
    def __getattr__(self, name: str) -> "Sym":
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        k = self._k
        if k is not None:
            if k.what == "module" and name in ("kernel", "jit"):
                return kernel if name == "kernel" else jit  # type: ignore[return-value]
            if k.what == "enum" and name not in k.parts:
                _no_such(f"{k.name} has no member {name!r}", name, k.parts)
        return Sym(ir.Attr(self._e, name, _loc()), _attr_kind(k, name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise DslError(f"cannot assign to an attribute ({name}) of a traced value", _loc())

    def __call__(self, *args: Any, **kwargs: Any) -> "Sym":
        k = self._k
        rk: Optional[Kind] = None
        if k is not None:
            if k.what == "method":
                rk = _check_method(k.parts[0], k.name, args, kwargs)
            elif k.what == "create":
                if args:
                    raise DslError(f"{k.name}.create() takes keyword arguments only "
                                   "(num_stages=..., producer_group=..., ...)", _loc())
                rk = Kind("pipeline", k.cls)
            elif k.what == "class" and k.cls is _NamedBarrierModel:
                rk = Kind("named_barrier", _NamedBarrierModel)
            elif k.what == "builtin" and k.name in ("make_pipeline_state", "PipelineState"):
                rk = Kind("state")
            elif k.what == "class":
                rk = None
        call = ir.Call(self._e, tuple(to_expr(a) for a in args),
                       tuple((n, to_expr(v)) for n, v in kwargs.items()), _loc())
        return Sym(call, rk)

    def __getitem__(self, index: Any) -> "Sym":
        return Sym(ir.Subscript(self._e, to_expr(index), _loc()))

    def __iter__(self) -> Iterator[Any]:
        raise DslError("a traced value cannot be iterated in Python; unpack it in an "
                       "assignment (a, b = ...) or loop with range(...)", _loc())

    def __bool__(self) -> bool:
        if isinstance(self._e, ir.Const):
            return bool(self._e.value)
        raise DslError("a traced value has no truth value in Python here; use it in the "
                       "kernel's own if/while (recorded), not in a comprehension, lambda "
                       "or @pipeproof.python helper", _loc())

    def __index__(self) -> int:
        if isinstance(self._e, ir.Const) and isinstance(self._e.value, int):
            return int(self._e.value)
        raise DslError("a traced value is not a Python int here (it is only known per warp "
                       "when the model runs); use range(...) for loops over it", _loc())

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Sym({unparse(self._e)})"

    # -- operators
    def _bin(self, op: str, other: Any, reflected: bool = False) -> "Sym":
        a, b = (to_expr(other), self._e) if reflected else (self._e, to_expr(other))
        return Sym(ir.BinOp(op, a, b, _loc()))

    def __add__(self, o: Any) -> "Sym": return self._bin("+", o)
    def __radd__(self, o: Any) -> "Sym": return self._bin("+", o, True)
    def __sub__(self, o: Any) -> "Sym": return self._bin("-", o)
    def __rsub__(self, o: Any) -> "Sym": return self._bin("-", o, True)
    def __mul__(self, o: Any) -> "Sym": return self._bin("*", o)
    def __rmul__(self, o: Any) -> "Sym": return self._bin("*", o, True)
    def __floordiv__(self, o: Any) -> "Sym": return self._bin("//", o)
    def __rfloordiv__(self, o: Any) -> "Sym": return self._bin("//", o, True)
    def __truediv__(self, o: Any) -> "Sym": return self._bin("/", o)
    def __rtruediv__(self, o: Any) -> "Sym": return self._bin("/", o, True)
    def __mod__(self, o: Any) -> "Sym": return self._bin("%", o)
    def __rmod__(self, o: Any) -> "Sym": return self._bin("%", o, True)
    def __pow__(self, o: Any) -> "Sym": return self._bin("**", o)
    def __rpow__(self, o: Any) -> "Sym": return self._bin("**", o, True)
    def __lshift__(self, o: Any) -> "Sym": return self._bin("<<", o)
    def __rlshift__(self, o: Any) -> "Sym": return self._bin("<<", o, True)
    def __rshift__(self, o: Any) -> "Sym": return self._bin(">>", o)
    def __rrshift__(self, o: Any) -> "Sym": return self._bin(">>", o, True)
    def __and__(self, o: Any) -> "Sym": return self._bin("&", o)
    def __rand__(self, o: Any) -> "Sym": return self._bin("&", o, True)
    def __or__(self, o: Any) -> "Sym": return self._bin("|", o)
    def __ror__(self, o: Any) -> "Sym": return self._bin("|", o, True)
    def __xor__(self, o: Any) -> "Sym": return self._bin("^", o)
    def __rxor__(self, o: Any) -> "Sym": return self._bin("^", o, True)
    def __neg__(self) -> "Sym": return Sym(ir.UnaryOp("-", self._e, _loc()))
    def __pos__(self) -> "Sym": return Sym(ir.UnaryOp("+", self._e, _loc()))
    def __invert__(self) -> "Sym": return Sym(ir.UnaryOp("~", self._e, _loc()))

    # comparisons (the preprocessor turns `a < b` into cmp(); these serve plain Python)
    def __eq__(self, o: Any) -> "Sym": return Sym(ir.Compare("==", self._e, to_expr(o), _loc()))  # type: ignore[override]  # noqa: E501
    def __ne__(self, o: Any) -> "Sym": return Sym(ir.Compare("!=", self._e, to_expr(o), _loc()))  # type: ignore[override]  # noqa: E501
    def __lt__(self, o: Any) -> "Sym": return Sym(ir.Compare("<", self._e, to_expr(o), _loc()))
    def __le__(self, o: Any) -> "Sym": return Sym(ir.Compare("<=", self._e, to_expr(o), _loc()))
    def __gt__(self, o: Any) -> "Sym": return Sym(ir.Compare(">", self._e, to_expr(o), _loc()))
    def __ge__(self, o: Any) -> "Sym": return Sym(ir.Compare(">=", self._e, to_expr(o), _loc()))


def _attr_kind(k: Optional[Kind], name: str) -> Optional[Kind]:
    if k is None:
        return None
    if k.what == "module":
        return _API_KINDS.get(name, Kind("module", name=name))
    if k.what == "class" and name == "create":
        if k.cls in registry.PIPELINE_CLASSES:
            return Kind("create", k.cls, k.cls.CLASS)
        return None
    if k.what == "state":
        if name in _STATE_ATTRS:
            return None
        return Kind("method", name=name, parts=(k,))
    if k.what in ("pipeline", "producer", "consumer", "handle", "named_barrier"):
        # methods, or attributes (num_stages, is_leader_cta, handle.index, barrier_id ...):
        # an unknown name is reported when it is *called*
        return Kind("method", name=name, parts=(k,))
    return None


def to_expr(v: Any) -> Any:
    """A Python value as an IR expression (traced values are already expressions)."""
    if isinstance(v, Sym):
        return v._e
    if v is None or isinstance(v, (bool, int, str)):
        return ir.Const(v, _loc())
    if isinstance(v, tuple):
        return ir.TupleExpr(tuple(to_expr(x) for x in v), _loc())
    if isinstance(v, list):
        return ir.ListExpr(tuple(to_expr(x) for x in v), _loc())
    if isinstance(v, range) and v.step == 1 and v.start == 0:
        return ir.Call(ir.Name("range"), (ir.Const(v.stop),), (), _loc())
    raise DslError(f"a value of type {type(v).__name__} ({v!r:.60}) cannot be used in a "
                   "kernel (only traced values, ints, bools, strings, None, tuples and "
                   "lists)", _loc())


def _expressible(v: Any) -> bool:
    if isinstance(v, Sym) or v is None or isinstance(v, (bool, int, str)):
        return True
    if isinstance(v, (tuple, list)):
        return all(_expressible(x) for x in v)
    return False


def unparse(e: Any) -> str:
    """Compact text of an IR expression (for messages)."""
    t = type(e)
    if t is ir.Const:
        return repr(e.value)
    if t is ir.Name:
        return e.id
    if t is ir.Attr:
        return f"{unparse(e.obj)}.{e.name}"
    if t is ir.Call:
        parts = [unparse(a) for a in e.args] + [f"{k}={unparse(v)}" for k, v in e.kwargs]
        return f"{unparse(e.func)}({', '.join(parts)})"
    if t is ir.BinOp:
        return f"({unparse(e.left)} {e.op} {unparse(e.right)})"
    if t is ir.Compare:
        return f"({unparse(e.left)} {e.op} {unparse(e.right)})"
    if t is ir.UnaryOp:
        return f"{e.op}{' ' if e.op == 'not' else ''}{unparse(e.operand)}"
    if t is ir.BoolOp:
        return "(" + f" {e.op} ".join(unparse(v) for v in e.values) + ")"
    if t in (ir.TupleExpr, ir.ListExpr):
        inner = ", ".join(unparse(x) for x in e.elts)
        return f"({inner})" if t is ir.TupleExpr else f"[{inner}]"
    if t is ir.Subscript:
        return f"{unparse(e.obj)}[{unparse(e.index)}]"
    if t is ir.IfExp:
        return f"({unparse(e.then)} if {unparse(e.cond)} else {unparse(e.orelse)})"
    return repr(e)


# --------------------------------------------------------------------------- the recorder


@dataclass
class _Frame:
    kind: str                      # body | for | while | if | with
    loc: ir.Loc
    body: list = field(default_factory=list)
    orelse: list = field(default_factory=list)
    in_else: bool = False
    staged: bool = True            # if: False when decided in Python
    data: tuple = ()

    def add(self, s: Any) -> None:
        (self.orelse if self.in_else else self.body).append(s)


class _Tracer:
    """Records IR statements while a preprocessed kernel runs (``__pp`` in its code)."""

    def __init__(self, file: str):
        self.file = file
        self.frames: list[_Frame] = [_Frame("body", ir.Loc(file, 0, 0))]
        self.loc = ir.Loc(file, 0, 0)

    # -- helpers
    def at(self, line: int, col: int) -> ir.Loc:
        self.loc = ir.Loc(self.file, line, col)
        return self.loc

    def emit(self, s: Any) -> None:
        self.frames[-1].add(s)

    def push(self, f: _Frame) -> None:
        self.frames.append(f)

    # -- literals and expressions
    def c(self, value: Any) -> Sym:
        return Sym(ir.Const(value, self.loc))

    def call(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(f, Sym):
            return f(*args, **kwargs)
        if isinstance(f, KernelDef):
            raise DslError(f"cannot call the kernel {f.name} from a kernel", self.loc)
        pyname = next((n for b, n in _PY_BUILTINS if f is b), None)
        if pyname and any(_has_sym(a) for a in args + tuple(kwargs.values())):
            return Sym(ir.Name(pyname))(*args, **kwargs)
        target = _inline_target(f)
        if target is not None:
            fn, bound = target
            return _inline(self, fn, bound + args, kwargs)
        try:
            return f(*args, **kwargs)
        except DslError:
            raise
        except TypeError as e:
            if any(_has_sym(a) for a in args + tuple(kwargs.values())):
                raise DslError(f"{getattr(f, '__name__', f)!s}() cannot take traced values "
                               f"({e}); call it with plain Python values, or make it a "
                               "kernel helper", self.loc) from None
            raise

    def and_(self, *thunks: Callable[[], Any]) -> Any:
        return self._boolop("and", thunks)

    def or_(self, *thunks: Callable[[], Any]) -> Any:
        return self._boolop("or", thunks)

    def _boolop(self, op: str, thunks: tuple) -> Any:
        first = thunks[0]()
        if not isinstance(first, Sym):
            # Python semantics while the values are plain
            v = first
            for i, t in enumerate(thunks[1:], 1):
                if (op == "and" and not v) or (op == "or" and v):
                    return v
                v = t()
                if isinstance(v, Sym):
                    rest = [v] + [t2() for t2 in thunks[i + 1:]]
                    return Sym(ir.BoolOp(op, tuple(to_expr(x) for x in rest), self.loc))
            return v
        vals = [first] + [t() for t in thunks[1:]]
        return Sym(ir.BoolOp(op, tuple(to_expr(x) for x in vals), self.loc))

    def not_(self, v: Any) -> Any:
        if isinstance(v, Sym):
            return Sym(ir.UnaryOp("not", v._e, self.loc))
        return not v

    def cmp(self, ops: list, values: list) -> Any:
        if not any(isinstance(v, Sym) for v in values):
            for op, a, b in zip(ops, values, values[1:]):
                if not _py_compare(op, a, b):
                    return False
            return True
        parts = [ir.Compare(op, to_expr(a), to_expr(b), self.loc)
                 for op, a, b in zip(ops, values, values[1:])]
        return Sym(parts[0] if len(parts) == 1 else ir.BoolOp("and", tuple(parts), self.loc))

    def ifexp(self, cond: Any, then: Callable[[], Any], orelse: Callable[[], Any]) -> Any:
        if isinstance(cond, Sym):
            return Sym(ir.IfExp(cond._e, to_expr(then()), to_expr(orelse()), self.loc))
        return then() if cond else orelse()

    # -- statements
    def assign(self, names: tuple, value: Any, unpack: bool, line: int, col: int) -> Any:
        loc = self.at(line, col)
        if not _expressible(value):
            # a Python-level alias (a helper function, a module, an object): not recorded
            if unpack:
                return tuple(value)
            return value
        self.emit(ir.Assign(names, to_expr(value), unpack, loc))
        kind = value._k if isinstance(value, Sym) else None
        if unpack:
            parts = kind.parts if kind is not None and kind.what == "tuple" else ()
            return tuple(Sym(ir.Name(n, loc), parts[i] if i < len(parts) else None)
                         for i, n in enumerate(names))
        return Sym(ir.Name(names[0], loc), kind)

    def augassign(self, name: str, op: str, value: Any, line: int, col: int) -> Sym:
        loc = self.at(line, col)
        self.emit(ir.AugAssign(name, op, to_expr(value), loc))
        return Sym(ir.Name(name, loc))

    def expr(self, value: Any, line: int, col: int) -> None:
        loc = self.at(line, col)
        if isinstance(value, Sym):
            self.emit(ir.ExprStmt(value._e, loc))
        elif value is not None and _expressible(value):
            self.emit(ir.ExprStmt(to_expr(value), loc))

    def pass_(self, line: int, col: int) -> None:
        self.emit(ir.Pass(self.at(line, col)))

    def break_(self, line: int, col: int) -> None:
        self.emit(ir.Break(self.at(line, col)))

    def continue_(self, line: int, col: int) -> None:
        self.emit(ir.Continue(self.at(line, col)))

    def return_(self, line: int, col: int) -> None:
        self.emit(ir.Return(self.at(line, col)))

    def for_begin(self, var: str, args: list, line: int, col: int,
                  constexpr: bool = False) -> Sym:
        loc = self.at(line, col)
        if not 1 <= len(args) <= 3:
            raise DslError("a for loop must iterate over range(stop), range(start, stop) "
                           "or range(start, stop, step)", loc)
        ex = [to_expr(a) for a in args]
        if len(ex) == 1:
            start, stop, step = ir.Const(0), ex[0], ir.Const(1)
        elif len(ex) == 2:
            start, stop, step = ex[0], ex[1], ir.Const(1)
        else:
            start, stop, step = ex
        self.push(_Frame("for", loc, data=(var, start, stop, step, constexpr)))
        return Sym(ir.Name(var, loc))

    def for_begin_constexpr(self, var: str, args: list, line: int, col: int) -> Sym:
        return self.for_begin(var, args, line, col, constexpr=True)

    @staticmethod
    def constexpr_static(*args: Any) -> bool:
        """Are a ``range_constexpr``'s bounds plain Python ints (unrolled here), or traced
        values such as the kernel's parameters (recorded as a constexpr ``ir.For``, as a
        ``.pipe`` file's ``cutlass.range_constexpr(n)``)?"""
        return not any(isinstance(a, Sym) and not isinstance(a._e, ir.Const) for a in args)

    def constexpr_range(self, *args: Any) -> range:
        return range(*[int(a) for a in args])

    def while_begin(self, cond: Any, line: int, col: int) -> None:
        loc = self.at(line, col)
        self.push(_Frame("while", loc, data=(to_expr(cond),)))

    def if_begin(self, cond: Any, line: int, col: int) -> bool:
        loc = self.at(line, col)
        if isinstance(cond, Sym):
            self.push(_Frame("if", loc, data=(cond._e,)))
            return True
        self.push(_Frame("if", loc, staged=False, data=(bool(cond),)))
        return bool(cond)

    def else_(self) -> bool:
        f = self.frames[-1]
        assert f.kind == "if"
        f.in_else = True
        return True if f.staged else not f.data[0]

    def with_begin(self, ctx: Any, line: int, col: int) -> None:
        loc = self.at(line, col)
        if not isinstance(ctx, Sym):
            raise DslError("only 'with role(...):' and 'with elect_one():' (and other "
                           "traced context managers) are supported in a kernel", loc)
        self.push(_Frame("with", loc, data=(ctx._e,)))

    def end(self) -> None:
        f = self.frames.pop()
        body = tuple(f.body)
        if f.kind == "for":
            var, start, stop, step, constexpr = f.data
            self.emit(ir.For(var, start, stop, step, body, f.loc, constexpr))
        elif f.kind == "while":
            self.emit(ir.While(f.data[0], body, f.loc))
        elif f.kind == "if":
            if f.staged:
                self.emit(ir.If(f.data[0], body, tuple(f.orelse), f.loc))
            else:
                for s in f.body + f.orelse:   # decided in Python: keep the branch taken
                    self.emit(s)
        elif f.kind == "with":
            e = f.data[0]
            if isinstance(e, ir.Call) and isinstance(e.func, ir.Name) and e.func.id == "role":
                self.emit(_role_block(e, body, f.loc))
            else:
                self.emit(ir.With(e, body, f.loc))
        else:  # pragma: no cover
            raise AssertionError(f.kind)


def _py_compare(op: str, a: Any, b: Any) -> bool:
    return {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b,
            "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b,
            "in": lambda: a in b, "not in": lambda: a not in b, "is": lambda: a is b,
            "is not": lambda: a is not b}[op]()


def _has_sym(v: Any) -> bool:
    if isinstance(v, Sym):
        return True
    if isinstance(v, (tuple, list)):
        return any(_has_sym(x) for x in v)
    return False


#: Python builtins that are also ``.pipe`` builtins: called with traced values they are
#: recorded (``min(a, b)`` -> ``Call(Name("min"), ...)``)
#: (every ``.pipe`` builtin whose name is also a Python builtin: min, max, abs, int, bool,
#: len, range ...; computed from the table, so new ones are covered)
_SHADOWING = {n for n in builtins_table() if hasattr(_py, n)}
_PY_BUILTINS = tuple((getattr(_py, n), n) for n in sorted(_SHADOWING))

_CURRENT: list[_Tracer] = []


def _loc() -> ir.Loc:
    return _CURRENT[-1].loc if _CURRENT else ir.NOLOC


# --------------------------------------------------------------------------- preprocessor


_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
        ast.GtE: ">=", ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
_AUG = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%",
        ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^", ast.LShift: "<<",
        ast.RShift: ">>", ast.Div: "/", ast.Pow: "**"}
PP = "__pp"


def _pp(attr: str) -> ast.expr:
    return ast.Attribute(ast.Name(PP, ast.Load()), attr, ast.Load())


def _ppcall(attr: str, *args: ast.expr, **kw: ast.expr) -> ast.Call:
    return ast.Call(_pp(attr), list(args), [ast.keyword(k, v) for k, v in kw.items()])


def _const(v: Any) -> ast.Constant:
    return ast.Constant(v)


def _thunk(e: ast.expr) -> ast.Lambda:
    return ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                    kw_defaults=[], kwarg=None, defaults=[]), e)


def _range_kind(call: ast.expr) -> Optional[str]:
    """``range``/``cutlass.range``/``range_dynamic`` -> "staged"; ``range_constexpr`` ->
    "python"; anything else None."""
    if not isinstance(call, ast.Call):
        return None
    f = call.func
    name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute)
                                                 else None)
    if name in ("range", "range_dynamic"):
        return "staged"
    if name == "range_constexpr":
        return "python"
    return None


class _Exprs(ast.NodeTransformer):
    """Rewrites expressions: literals become traced constants, calls go through
    ``__pp.call``, ``and``/``or``/``not``/comparisons/conditional expressions through
    the tracer.  Comprehensions, lambdas and f-strings stay plain Python."""

    def __init__(self, pre: "_Preprocessor"):
        self.pre = pre

    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        if node.value is Ellipsis or isinstance(node.value, bytes):
            return node
        return ast.copy_location(_ppcall("c", node), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        # the parser folds -<int literal> into a constant: do the same
        if isinstance(node.op, ast.USub):
            folded = _fold_neg(node)
            if folded is not None:
                return ast.copy_location(_ppcall("c", _const(folded)), node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_ppcall("not_", self.visit(node.operand)), node)
        node.operand = self.visit(node.operand)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(
            _ppcall(fn, *[_thunk(self.visit(v)) for v in node.values]), node)

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        ops = ast.List([_const(_CMP[type(o)]) for o in node.ops], ast.Load())
        vals = ast.List([self.visit(node.left)] + [self.visit(c) for c in node.comparators],
                        ast.Load())
        return ast.copy_location(_ppcall("cmp", ops, vals), node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        return ast.copy_location(_ppcall("ifexp", self.visit(node.test),
                                         _thunk(self.visit(node.body)),
                                         _thunk(self.visit(node.orelse))), node)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        func = self.visit(node.func)
        args = [self.visit(a) for a in node.args]
        kws = [ast.keyword(k.arg, self.visit(k.value)) for k in node.keywords]
        return ast.copy_location(ast.Call(_pp("call"), [func] + args, kws), node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> ast.expr:
        raise self.pre.error("assignment expressions (:=) are not supported in a kernel", node)

    # plain Python inside these
    def visit_Lambda(self, node: ast.Lambda) -> ast.expr:
        return node

    def visit_ListComp(self, node: ast.ListComp) -> ast.expr:
        return node

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.expr:
        return node


def _fold_neg(node: ast.expr) -> Optional[int]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = node.operand
        if isinstance(inner, ast.Constant) and isinstance(inner.value, int):
            return -inner.value
        v = _fold_neg(inner)
        if v is not None:
            return -v
    return None


class _Preprocessor:
    """Rewrites the statements of a kernel (``helper=False``) or of a helper function
    that is inlined into one (``helper=True``)."""

    def __init__(self, file: str, col_shift: int, helper: bool):
        self.file = file
        self.col_shift = col_shift
        self.helper = helper
        self.loops: list[str] = []      # "staged" | "python"
        self.exprs = _Exprs(self)

    def error(self, msg: str, node: ast.AST) -> DslError:
        return DslError(msg, self.loc(node))

    def loc(self, node: ast.AST) -> ir.Loc:
        return ir.Loc(self.file, getattr(node, "lineno", 0),
                      getattr(node, "col_offset", 0) + self.col_shift + 1)

    def pos(self, node: ast.AST) -> list[ast.expr]:
        loc = self.loc(node)
        return [_const(loc.line), _const(loc.column)]

    def e(self, node: ast.expr) -> ast.expr:
        return self.exprs.visit(node)

    def body(self, stmts: list[ast.stmt], top: bool = False) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for i, s in enumerate(stmts):
            last = top and i == len(stmts) - 1
            # the location first, so that errors while evaluating the statement point at it
            out.append(ast.copy_location(ast.Expr(_ppcall("at", *self.pos(s))), s))
            out.extend(ast.copy_location(x, s) for x in self.stmt(s, last))
        return out or [ast.Pass()]

    def stmt(self, s: ast.stmt, last: bool) -> list[ast.stmt]:
        t = type(s)
        if t is ast.Expr:
            return [ast.Expr(_ppcall("expr", self.e(s.value), *self.pos(s)))]
        if t is ast.Assign:
            if len(s.targets) != 1:
                raise self.error("chained assignment (a = b = ...) is not supported", s)
            tgt = s.targets[0]
            if isinstance(tgt, ast.Name):
                names, unpack = [tgt.id], False
            elif isinstance(tgt, (ast.Tuple, ast.List)) and all(
                    isinstance(x, ast.Name) for x in tgt.elts):
                names, unpack = [x.id for x in tgt.elts], True
            else:
                raise self.error("only names can be assigned to (a = ..., or a, b = ...)", s)
            call = _ppcall("assign", ast.Tuple([_const(n) for n in names], ast.Load()),
                           self.e(s.value), _const(unpack), *self.pos(s))
            target: ast.expr = ast.Name(names[0], ast.Store()) if not unpack else ast.Tuple(
                [ast.Name(n, ast.Store()) for n in names], ast.Store())
            return [ast.Assign([target], call)]
        if t is ast.AugAssign:
            if not isinstance(s.target, ast.Name):
                raise self.error("only names can be assigned to", s)
            op = _AUG.get(type(s.op))
            if op is None:
                raise self.error("unsupported augmented assignment", s)
            call = _ppcall("augassign", _const(s.target.id), _const(op), self.e(s.value),
                           *self.pos(s))
            return [ast.Assign([ast.Name(s.target.id, ast.Store())], call)]
        if t is ast.AnnAssign:
            raise self.error("annotated assignments are not supported in a kernel body", s)
        if t is ast.For:
            return self.for_(s)
        if t is ast.While:
            if s.orelse:
                raise self.error("while ... else is not supported", s)
            self.loops.append("staged")
            body = self.body(s.body)
            self.loops.pop()
            return [ast.Expr(_ppcall("while_begin", self.e(s.test), *self.pos(s))),
                    *body, ast.Expr(_ppcall("end"))]
        if t is ast.If:
            then = self.body(s.body)
            orelse = self.body(s.orelse) if s.orelse else [ast.Pass()]
            return [ast.If(_ppcall("if_begin", self.e(s.test), *self.pos(s)), then, []),
                    ast.If(_ppcall("else_"), orelse, []),
                    ast.Expr(_ppcall("end"))]
        if t is ast.With:
            if len(s.items) != 1:
                raise self.error("one context manager per 'with'", s)
            item = s.items[0]
            if item.optional_vars is not None:
                raise self.error("'with ... as NAME' is not supported", s)
            return [ast.Expr(_ppcall("with_begin", self.e(item.context_expr), *self.pos(s))),
                    *self.body(s.body), ast.Expr(_ppcall("end"))]
        if t is ast.Pass:
            return [ast.Expr(_ppcall("pass_", *self.pos(s)))]
        if t in (ast.Break, ast.Continue):
            if self.loops and self.loops[-1] == "python":
                return [s]
            name = "break_" if t is ast.Break else "continue_"
            return [ast.Expr(_ppcall(name, *self.pos(s)))]
        if t is ast.Return:
            if self.helper:
                if not last:
                    raise self.error("a helper inlined into a kernel can return only as its "
                                     "last statement (a traced if/for cannot return from a "
                                     "Python function)", s)
                return [ast.Return(self.e(s.value) if s.value is not None else None)]
            if s.value is not None:
                raise self.error("a kernel body cannot return a value", s)
            return [ast.Expr(_ppcall("return_", *self.pos(s)))]
        if t in (ast.FunctionDef, ast.Import, ast.ImportFrom):
            return [s]            # local helpers and imports: plain Python
        raise self.error(f"{t.__name__} statements are not supported in a kernel", s)

    def for_(self, s: ast.For) -> list[ast.stmt]:
        if s.orelse:
            raise self.error("for ... else is not supported", s)
        if not isinstance(s.target, ast.Name):
            raise self.error("a for loop needs one loop variable (for i in range(...))", s)
        kind = _range_kind(s.iter)
        if kind is None:
            raise self.error("a for loop must iterate over range(stop), range(start, stop) "
                             "or range(start, stop, step) (or range_constexpr(...) for a "
                             "loop unrolled in Python)", s)
        call = s.iter
        assert isinstance(call, ast.Call)
        # the transformer rewrites nodes in place: keep untouched copies for the second
        # transformation a range_constexpr over traced bounds needs
        raw_body, raw_args = copy.deepcopy(s.body), copy.deepcopy(call.args)
        args = [self.e(a) for a in call.args]
        self.loops.append(kind)
        body = self.body(s.body)
        self.loops.pop()
        if kind == "python":
            # plain ints: a Python loop; traced bounds: a constexpr ir.For (its body is
            # transformed a second time, as a recorded loop's)
            args2 = [self.e(a) for a in raw_args]
            self.loops.append("staged")
            staged = self.body(raw_body)
            self.loops.pop()
            return [ast.If(_ppcall("constexpr_static", *args),
                           [ast.For(ast.Name(s.target.id, ast.Store()),
                                    _ppcall("constexpr_range", *args), body, [])],
                           self._staged_for(s, args2, staged, True))]
        return self._staged_for(s, args, body, False)

    def _staged_for(self, s: ast.For, args: list, body: list, constexpr: bool) -> list:
        begin = _ppcall("for_begin_constexpr" if constexpr else "for_begin",
                        _const(s.target.id), ast.List(args, ast.Load()), *self.pos(s))
        return [ast.Assign([ast.Name(s.target.id, ast.Store())], begin), *body,
                ast.Expr(_ppcall("end"))]


@dataclass
class _Source:
    file: str
    node: ast.FunctionDef
    col_shift: int


def _function_source(fn: Callable[..., Any]) -> _Source:
    try:
        file = inspect.getsourcefile(fn) or inspect.getfile(fn)
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise DslError(f"cannot read the source of {getattr(fn, '__name__', fn)!r} ({e}); "
                       "kernels and helpers must be defined in a file") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    shift = _indent(lines[0]) - _indent(dedented.splitlines()[0] + "\n") if lines else 0
    with PY_AST_LOCK:               # CPython 3.11 AST construction is not thread-safe
        tree = ast.parse(dedented)
    ast.increment_lineno(tree, first - 1)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise DslError(f"{fn!r} is not a plain function definition")
    return _Source(file, node, shift)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _compile(fn: Callable[..., Any], helper: bool) -> Callable[..., Any]:
    """Preprocess ``fn``.  Returns ``make(tracer)``, which gives the rewritten function;
    it is defined inside an outer function whose arguments are the tracer (``__pp``) and
    the values of ``fn``'s closure variables."""
    src = _function_source(fn)
    pre = _Preprocessor(src.file, src.col_shift, helper)
    node = src.node
    for a in node.args.args + node.args.kwonlyargs:
        a.annotation = None
    node.returns = None
    new_body = pre.body(node.body, top=True)
    inner = ast.FunctionDef(node.name, node.args, new_body, [], None, None)
    ast.copy_location(inner, node)
    free = list(fn.__code__.co_freevars)
    outer = ast.FunctionDef(
        "__pp_outer",
        ast.arguments(posonlyargs=[], args=[ast.arg(PP)] + [ast.arg(v) for v in free],
                      vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        [inner, ast.Return(ast.Name(node.name, ast.Load()))], [], None, None)
    ast.copy_location(outer, node)
    mod = ast.Module([outer], [])
    ast.fix_missing_locations(mod)
    with PY_AST_LOCK:
        code = compile(mod, src.file, "exec")
    ns: dict[str, Any] = {}
    exec(code, fn.__globals__, ns)     # the function's live globals; nothing is added to them
    outer_fn = ns["__pp_outer"]

    def make(tracer: _Tracer) -> Callable[..., Any]:
        cells = []                      # closure values as they are now
        for name, cell in zip(free, fn.__closure__ or ()):
            try:
                cells.append(cell.cell_contents)
            except ValueError:
                raise DslError(f"{fn.__name__} uses {name!r} before it is assigned",
                               tracer.loc) from None
        return outer_fn(tracer, *cells)

    make.node = node  # type: ignore[attr-defined]
    make.source = src  # type: ignore[attr-defined]
    return make


def _compiled(fn: Callable[..., Any], helper: bool) -> Callable[..., Any]:
    """``_compile(fn, helper)``, cached on the function object itself (so the cache lives
    exactly as long as the function; closure values and globals are read at each trace)."""
    cache = fn.__dict__.setdefault("__pipeproof_preprocessed__", {})
    got = cache.get(helper)
    if got is None:
        got = cache[helper] = _compile(fn, helper)
    return got


# --------------------------------------------------------------------------- helpers


_LIB_DIRS = tuple({str(Path(p).resolve()) for k in ("stdlib", "platstdlib", "purelib",
                                                    "platlib")
                   if (p := sysconfig.get_paths().get(k))})
_PKG_DIR = str(Path(__file__).resolve().parent.parent)


def python(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a helper to run as ordinary Python when a kernel calls it (compile-time
    computation on plain values) instead of being inlined and traced."""
    fn.__pipeproof_python__ = True  # type: ignore[attr-defined]
    return fn


def jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``@cute.jit``: mark a helper that a kernel inlines (plain functions defined outside
    the standard library and site-packages are inlined anyway)."""
    fn.__pipeproof_jit__ = True  # type: ignore[attr-defined]
    return fn


def _inline_target(f: Any) -> Optional[tuple[Callable[..., Any], tuple]]:
    bound: tuple = ()
    if inspect.ismethod(f) and isinstance(f.__func__, types.FunctionType):
        bound, f = (f.__self__,), f.__func__
    if not isinstance(f, types.FunctionType):
        return None
    if getattr(f, "__pipeproof_python__", False):
        return None
    if getattr(f, "__pipeproof_jit__", False):
        return f, bound
    if f.__name__ == "<lambda>":
        return None
    mod = getattr(f, "__module__", "") or ""
    if mod == "pipeproof" or mod.startswith("pipeproof."):
        return None
    try:
        file = str(Path(inspect.getsourcefile(f) or "").resolve())
    except TypeError:
        return None
    if any(file.startswith(d) for d in _LIB_DIRS) and not file.startswith(_PKG_DIR):
        return None
    return f, bound


_PURE_CALLS = {"CooperativeGroup", "make_layout", "tiled_divide", "size", "min", "max",
               "abs", "int", "bool", "len", "make_layout_image_mask",
               "create_tma_multicast_mask", "warp_idx", "make_warp_uniform",
               "block_idx_in_cluster", "cta_rank_in_cluster", "cluster_size",
               "get_flat_coord", "range"}


def _effectful(e: Any) -> bool:
    """Does evaluating ``e`` do something (a call that is not a pure layout/group helper)?"""
    for n in ir.walk_exprs(e):
        if isinstance(n, ir.Call):
            f = n.func
            name = f.id if isinstance(f, ir.Name) else (f.name if isinstance(f, ir.Attr)
                                                        else "")
            if name not in _PURE_CALLS:
                return True
    return False


def _inline(tracer: _Tracer, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    made = _compiled(fn, helper=True)
    sig = inspect.signature(fn)
    try:
        ba = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise DslError(f"{fn.__name__}(): {e}", tracer.loc) from None
    ba.apply_defaults()
    call_loc = tracer.loc
    for name, v in list(ba.arguments.items()):
        if isinstance(v, Sym) and _effectful(v._e):
            # bind once: the helper may use the parameter several times
            tracer.emit(ir.Assign((name,), v._e, False, call_loc))
            ba.arguments[name] = Sym(ir.Name(name, call_loc), v._k)
    depth = len(tracer.frames)
    out = made(tracer)(*ba.args, **ba.kwargs)
    if len(tracer.frames) != depth:
        raise DslError(f"{fn.__name__}: unbalanced control flow (a break or continue "
                       "left a traced block)", tracer.loc)
    tracer.loc = call_loc
    return out


# --------------------------------------------------------------------------- kernels


class KernelDef:
    """A kernel written in Python: ``.ir`` is its kernel IR, ``check(...)`` its verdict."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.name = fn.__name__
        self._ir: Optional[ir.Kernel] = None
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    @property
    def file(self) -> str:
        try:
            return inspect.getsourcefile(self.fn) or "<python>"
        except TypeError:
            return "<python>"

    @property
    def ir(self) -> ir.Kernel:
        if self._ir is None:
            self._ir = trace_kernel(self.fn)
        return self._ir

    def check(self, params: Optional[dict[str, Any]] = None, **kw: Any) -> Any:
        return check(self, params, **kw)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.name} is a pipeproof kernel: check it with "
                        f"pipeproof.check({self.name}, params) rather than calling it")

    def __repr__(self) -> str:
        return f"<pipeproof kernel {self.name}>"


def kernel(fn: Optional[Callable[..., Any]] = None, **_options: Any) -> Any:
    """``@cute.kernel`` / ``@pipeproof.kernel``: turn a Python function into a kernel."""
    if fn is None:
        return lambda f: KernelDef(f)
    return KernelDef(fn)


def trace_kernel(fn: Callable[..., Any]) -> ir.Kernel:
    """Preprocess and trace ``fn`` into kernel IR."""
    made = _compiled(fn, helper=False)
    src: _Source = made.source  # type: ignore[attr-defined]
    node: ast.FunctionDef = made.node  # type: ignore[attr-defined]
    a = node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        raise DslError("kernel parameters must be plain (name: int = default)",
                       ir.Loc(src.file, node.lineno, node.col_offset + 1))
    tracer = _Tracer(src.file)
    pre = _Preprocessor(src.file, src.col_shift, False)
    params = []
    defaults = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults)
    _CURRENT.append(tracer)
    try:
        for arg, d in zip(a.args, defaults):
            loc = pre.loc(arg)
            dexpr = None
            if d is not None:
                tracer.loc = loc
                dexpr = to_expr(_eval_default(fn, copy.deepcopy(d), tracer))
            params.append(ir.Param(arg.arg, dexpr, loc))
        f = made(tracer)
        f(*[Sym(ir.Name(p.name, p.loc)) for p in params])
    except NameError as e:
        raise DslError(f"{e} (every name a kernel uses must be a kernel local, a "
                       "parameter, a pipeproof name or a global)", tracer.loc) from None
    finally:
        _CURRENT.pop()
    if len(tracer.frames) != 1:
        raise DslError("unbalanced control flow while tracing (a break or continue in a "
                       "range_constexpr loop left a traced if)", tracer.loc)
    body = tuple(tracer.frames[0].body)
    return ir.Kernel(fn.__name__, tuple(params), body,
                     ir.Loc(src.file, node.lineno, node.col_offset + 1 + src.col_shift))


def _eval_default(fn: Callable[..., Any], node: ast.expr, tracer: _Tracer) -> Any:
    """A parameter default, evaluated like kernel code (literals stay symbolic)."""
    pre = _Preprocessor(tracer.file, 0, False)
    expr = ast.Expression(pre.e(node))
    ast.fix_missing_locations(expr)
    code = compile(expr, tracer.file, "eval")
    return eval(code, dict(fn.__globals__), {PP: tracer})


# --------------------------------------------------------------------------- names


def _api_kinds() -> dict[str, Kind]:
    table = builtins_table()
    out: dict[str, Kind] = {}
    for name, v in table.items():
        t = type(v).__name__
        if t == "Namespace":
            out[name] = Kind("enum", name=name, parts=tuple(k for k, _ in v.members))
        elif t == "PipelineClassRef":
            out[name] = Kind("class", v.cls, name)
        elif t == "Builtin":
            out[name] = Kind("builtin", name=name)
        else:
            out[name] = Kind("value", name=name)
    out["role"] = Kind("builtin", name="role")
    # made by make_participants() in kernels; importable for annotations and isinstance-free
    # helper signatures, as in cutlass.pipeline
    out["PipelineProducer"] = Kind("value", name="PipelineProducer")
    out["PipelineConsumer"] = Kind("value", name="PipelineConsumer")
    for root in MODULE_ROOTS:
        out.setdefault(root, Kind("module", name=root))
    return out


_API_KINDS = _api_kinds()


def api_names() -> dict[str, Sym]:
    """Every name a kernel can use, as traced values (the ``.pipe`` builtins)."""
    return {n: Sym(ir.Name(n), k) for n, k in _API_KINDS.items()}


_NAMES = api_names()


def __getattr__(name: str) -> Any:
    """``from pipeproof.dsl import PipelineTmaAsync`` and every other kernel name."""
    try:
        return _NAMES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def namespace() -> dict[str, Any]:
    """The globals a ``.pipe`` file sees when it is run as Python (the Python builtins
    that are also ``.pipe`` builtins -- min, max, abs, int, bool, len, range -- stay
    Python's: called with traced values they are recorded)."""
    ns: dict[str, Any] = {n: v for n, v in _NAMES.items() if n not in _SHADOWING}
    ns.update({"kernel": kernel, "jit": jit, "python": python, "check": check})
    return ns


def load_pipe_as_python(path: Union[str, Path]) -> KernelDef:
    """Run a ``.pipe`` file as a Python module with the API's names (imports are
    dropped, as the parser drops them) and return its kernel.  The ``.pipe`` language is
    a Python subset, so this is the Python API building the kernel from the same text."""
    p = Path(path)
    text = p.read_text()
    return kernel_from_python_source(text, str(p))


def kernel_from_python_source(text: str, filename: str) -> KernelDef:
    """The kernel defined by Python source ``text`` (run with the API's names)."""
    lines = text.splitlines(True)
    linecache.cache[filename] = (len(text), None, lines, filename)
    with PY_AST_LOCK:
        tree = ast.parse(text, filename)
    tree.body = [ast.copy_location(ast.Pass(), s) if isinstance(s, (ast.Import,
                                                                    ast.ImportFrom)) else s
                 for s in tree.body]
    ns = namespace()
    ns["__name__"] = f"pipeproof_pipe_{abs(hash(filename))}"
    ns["__file__"] = filename
    mod = types.ModuleType(ns["__name__"])
    mod.__dict__.update(ns)
    sys.modules[ns["__name__"]] = mod
    try:
        with PY_AST_LOCK:
            code = compile(tree, filename, "exec")
        exec(code, mod.__dict__)
    finally:
        sys.modules.pop(ns["__name__"], None)
    kernels = [v for v in mod.__dict__.values() if isinstance(v, KernelDef)]
    if not kernels:
        raise DslError("the file does not define a kernel (@cute.kernel def NAME(...):)",
                       ir.Loc(filename, 1, 1))
    return kernels[0]


# --------------------------------------------------------------------------- check


def check(kernel_: Any, params: Optional[dict[str, Any]] = None, **kw: Any) -> Any:
    """Check a kernel: a ``@cute.kernel`` Python function, a kernel IR, or a ``.pipe``
    path.  Returns a ``CheckResult`` (``.verdict``, ``.status``, ``.prop``,
    ``.render_text()``); keyword arguments go to the engine (``timeout``,
    ``max_states``...)."""
    from .api import check_file, check_kernel

    if isinstance(kernel_, KernelDef):
        return check_kernel(kernel_.ir, params, file=kernel_.file, **kw)
    if isinstance(kernel_, ir.Kernel):
        return check_kernel(kernel_, params, **kw)
    if isinstance(kernel_, (str, Path)):
        return check_file(kernel_, params, **kw)
    if callable(kernel_):
        return check_kernel(KernelDef(kernel_).ir, params, **kw)
    raise TypeError(f"check() expects a kernel, got {type(kernel_).__name__}")


#: the names ``from pipeproof import *`` brings (see ``pipeproof/__init__.py``)
#: (module prefixes other than the usual CuTe DSL aliases stay out of ``import *``: names
#: like ``utils`` or ``core`` would shadow the user's own; ``pipeproof.utils`` still works)
_STAR_MODULES = {"cute", "cutlass", "cpasync", "tcgen05", "warpgroup"}
EXPORTS = sorted((set(_NAMES) - _SHADOWING - (set(MODULE_ROOTS) - _STAR_MODULES))
                 | {"kernel", "jit", "check", "KernelDef", "DslError", "load_pipe_as_python"})
