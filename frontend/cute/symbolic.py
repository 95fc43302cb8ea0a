"""Run-time trip counts as symbolic parameters: ``--param K=LO..HI`` on a CuTe DSL entry
whose ``K`` reaches the kernel only as a run-time integer argument
(``cute.compile(host, ..., cutlass.Int32(K))``).

The module ``cute.compile`` builds is then the same for every value of ``K``: the DSL
traces the ``@cute.jit`` function with the argument's type, not its value.  So the
module is captured once and lifted once, the argument becomes a ``values.Sym`` (its
value at each point of the range) and the lifter splits a warp's path where a branch
or loop bound depends on it (``Lifter.decide_points``, ``model.program.ParamSplit``),
as the ``.pipe`` compiler does for a symbolic parameter.

Soundness: the entry is called for every value with ``cute.compile`` replaced by a
recorder (no tracing), and every argument other than the run-time integers must be
the same as the first value's (fake tensors by shape, stride, dtype and alignment,
``Constexpr`` values by value); the module is also captured for the last value and
must print the same text as the first.  Anything else and the range is checked value
by value, each value compiled on its own (``plan`` says why).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .interp import ScalarParams

_LOC_REF = re.compile(r" loc\(#loc\d*\)")
#: how deep ``static_key`` looks into an argument object's attributes
_KEY_DEPTH = 5


class _Recorded(Exception):
    """Raised by the recorder to stop the entry at ``cute.compile``."""


def recorded_args(fn: Callable[..., Any], kwargs: dict) -> Optional[tuple]:
    """The positional arguments the entry passes to ``cute.compile`` (after the
    function), with ``cute.compile`` replaced by a recorder: nothing is traced.  None
    where the entry does not call ``cute.compile(...)`` exactly once that way."""
    import cutlass.cute as cute

    saved = cute.compile
    got: list[tuple] = []

    def recorder(f: Any, *args: Any, **kw: Any) -> Any:
        got.append((args, tuple(sorted(kw.items()))))
        raise _Recorded()

    cute.compile = recorder  # type: ignore[assignment]
    try:
        fn(**kwargs)
    except _Recorded:
        pass
    except Exception:
        return None
    finally:
        cute.compile = saved  # type: ignore[assignment]
    return got[0] if len(got) == 1 else None


def static_key(x: Any, depth: int = 0) -> Any:
    """What the DSL's trace may depend on, as a comparable value: plain values by
    value, containers item by item, other objects by type and attributes.  An object
    that prints with its address and has no attributes to compare gets a key of its
    own identity, so two calls never look alike by accident."""
    if x is None or isinstance(x, (bool, int, float, str, bytes)):
        return (type(x).__name__, x)
    if isinstance(x, type):
        return ("type", x.__module__, x.__qualname__)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(static_key(y, depth + 1) for y in x))
    if isinstance(x, dict):
        return ("dict", tuple((static_key(k, depth + 1), static_key(v, depth + 1))
                              for k, v in x.items()))
    t = type(x)
    name = (t.__module__, t.__qualname__)
    attrs = getattr(x, "__dict__", None)
    if attrs is not None and depth < _KEY_DEPTH:
        return name + (tuple((k, static_key(v, depth + 1)) for k, v in sorted(attrs.items())),)
    text = repr(x)
    if " at 0x" in text or depth >= _KEY_DEPTH:
        return name + (("identity", id(x)),)
    return name + (text,)


def _ops_text(text: str) -> list[str]:
    """The module without its locations (the ``#loc`` table and each op's
    ``loc(#locN)``): its ops, operands, types and attributes.  Locations name lines for
    the report only, and two traces of one module number and word them differently
    (where the DSL generated source: ``"<string>":6`` vs ``:7``)."""
    return [_LOC_REF.sub("", ln) for ln in text.splitlines() if not ln.startswith("#loc")]


@dataclass(frozen=True)
class Plan:
    """How a CuTe entry's parameter ranges are checked: ``params`` (symbolic) or the
    reason they are checked value by value."""

    params: Optional[ScalarParams]
    why: str = ""


def plan(fn: Callable[..., Any], params: dict, names: list[str], scalars: tuple,
         capture_text: Callable[[dict], str], first_text: str) -> Plan:
    """``params``: the entry's keyword arguments, ``names`` those given as ranges;
    ``scalars``: ``Capture.scalars`` of the compile at the first point, whose text is
    ``first_text``; ``capture_text(kwargs)`` captures the module for other values."""
    from ...model.compile import MAX_PARAM_POINTS

    points = tuple(itertools.product(*[params[k] for k in names]))
    if len(points) > MAX_PARAM_POINTS:
        return Plan(None, f"{len(points)} values (symbolic: at most {MAX_PARAM_POINTS})")
    runtime = [i for i, (_, count, value) in enumerate(scalars)
               if count == 1 and value is not None]
    if not runtime:
        return Plan(None, "the kernel has no run-time integer argument: each value "
                          "changes the compiled module")
    first_args: Optional[tuple] = None
    per_point: list[tuple] = []
    for pt in points:
        kwargs = dict(params, **dict(zip(names, pt)))
        got = recorded_args(fn, kwargs)
        if got is None or len(got[0]) != len(scalars):
            return Plan(None, "the entry's call of cute.compile could not be recorded")
        args, kw = got
        key = (tuple(static_key(a) for i, a in enumerate(args) if i not in runtime),
               static_key(kw))
        if first_args is None:
            first_args = key
        elif key != first_args:
            return Plan(None, "a value changes an argument of cute.compile other than "
                              "a run-time integer (a Constexpr, a tensor's shape)")
        vals = []
        for i in runtime:
            a = args[i]
            v = getattr(a, "value", a)
            if not isinstance(v, int) or isinstance(v, bool):
                return Plan(None, f"argument {scalars[i][0]!r} is not an integer")
            vals.append(v)
        per_point.append(tuple(vals))
    if len(points) > 1:
        last = dict(params, **dict(zip(names, points[-1])))
        if _ops_text(capture_text(last)) != _ops_text(first_text):
            return Plan(None, "the module compiled for the last value differs from the "
                              "first one's")
    args = {scalars[i][0]: tuple(p[j] for p in per_point) for j, i in enumerate(runtime)}
    return Plan(ScalarParams(tuple(names), points, args))


# ---------------------------------------------------------------- dynamic extents
# ``--param K=...`` where ``K`` is no parameter of the entry but the symbol of a fake
# tensor's dynamic extent (``cute.sym_int32(symbol="K")``): the module is the same for
# every value (the DSL traced the extent as a run-time value), so it is captured once
# and the extent gets its value in the lifter (``Lifter._shaped_args``, ``shapes.py``).

def split_params(fn: Callable[..., Any], params: dict, path: str = "<entry>"
                 ) -> tuple[dict, dict]:
    """``params`` as (the entry's keyword arguments, the rest): the rest must name
    dynamic extents of the fake tensors the entry passes to ``cute.compile``
    (recorded without tracing, before the compile); another name is a ConfigError
    (exit 2), as for an entry without such a parameter."""
    import inspect

    sig = inspect.signature(fn)
    names = {n for n, p in sig.parameters.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    entry = {k: v for k, v in params.items() if k in names}
    rest = {k: v for k, v in params.items() if k not in names}
    if rest:
        got = recorded_args(fn, {k: (v.start if isinstance(v, range) else v)
                                 for k, v in entry.items()})
        syms = _symbols(got[0]) if got is not None else set()
        for k in rest:
            if k not in syms:
                _no_such_name(fn, k, syms, path)
    return entry, rest


def _symbols(args: tuple) -> set:
    """The symbols of the ``SymInt`` extents of the fake tensors among ``args``."""
    from cutlass.cute.typing import SymInt

    out = set()
    for a in args:
        shape = getattr(a, "shape", None)
        if isinstance(shape, tuple):
            from .capture import _flat

            out |= {x.symbol for x in _flat(shape) if isinstance(x, SymInt) and x.symbol}
    return out


def _no_such_name(fn: Callable[..., Any], k: str, syms: Any, path: str) -> None:
    from ...model.errors import ConfigError, did_you_mean
    from ...model.ir import Loc
    from .entry import bind_params

    try:  # the entry's own message for a name it does not take
        bind_params(fn, {k: 0}, path)
    except ConfigError as e:
        listed = f" (dynamic extents: {', '.join(sorted(syms))})" if syms else \
            " (no fake tensor has a dynamic extent with a symbol)"
        raise ConfigError(loc=e.loc or Loc(path),
                          message=f"{e.message}, and no fake tensor has a dynamic "
                                  f"extent named {k!r}{listed}",
                          hint=did_you_mean(k, sorted(syms)) or e.hint) from None


def extent_symbols(cap: Any) -> dict[str, list]:
    """symbol -> the ``ShapeLeaf``s of the captured module's fake tensors it names."""
    out: dict[str, list] = {}
    for _, leaves in cap.shapes:
        for lf in leaves:
            if lf.symbol:
                out.setdefault(lf.symbol, []).append(lf)
    return out


def check_extent_names(cap: Any, extents: dict, fn: Callable[..., Any], path: str) -> None:
    """A ConfigError (exit 2) for a name that is neither a parameter of the entry nor
    the symbol of a dynamic extent of the captured module."""
    syms = extent_symbols(cap)
    for k in extents:
        if k not in syms:
            _no_such_name(fn, k, syms, path)


def extent_rule(cap: Any, name: str) -> tuple[int, str]:
    """(d, text): a value of extent ``name`` must be a positive multiple of ``d``, the
    ``divisibility`` its ``cute.sym_int`` declares (the DSL's code generation assumes
    it: another value is undefined behaviour, not a launch to check)."""
    div = 1
    for lf in extent_symbols(cap).get(name, []):
        div = div * lf.divisibility // _gcd(div, lf.divisibility)
    return div, (f"a positive multiple of {div} (cute.sym_int32(divisibility={div}) "
                 "declares it)" if div > 1 else "positive")


def valid_extent_values(cap: Any, name: str, values: Any) -> tuple[list[int], str]:
    """The values of extent ``name`` the kernel may be launched with
    (``extent_rule``), and a note on those left out ("" when none)."""
    div, rule = extent_rule(cap, name)
    vals = list(values) if isinstance(values, range) else [values]
    ok = [v for v in vals if isinstance(v, int) and v > 0 and v % div == 0]
    bad = len(vals) - len(ok)
    if not bad:
        return ok, ""
    return ok, (f"{name}: {len(ok)} of {len(vals)} values checked; the other {bad} are "
                f"not launches of this kernel: an extent is {rule}")


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def shape_values(cap: Any, extents: dict, fn: Callable[..., Any], path: str) -> dict:
    """One value per named dynamic extent (``--param K=64``); a ConfigError (exit 2)
    for a name that is neither a parameter of the entry nor an extent's symbol, or a
    value the extent's declaration excludes."""
    from ...model.errors import ConfigError
    from ...model.ir import Loc

    check_extent_names(cap, extents, fn, path)
    out = {}
    for k, v in extents.items():
        if isinstance(v, range):
            raise ConfigError(loc=Loc(path), message=f"{k}: a range of a dynamic extent is "
                              "checked by check_cute, not lifted as one kernel")
        if not valid_extent_values(cap, k, v)[0]:
            raise ConfigError(loc=Loc(path), message=f"--param {k}={v}: not a launch of "
                              f"this kernel: the extent {k} is {extent_rule(cap, k)[1]}")
        out[k] = v
    return out


def extent_points(cap: Any, sp: ScalarParams, ranges: dict) -> tuple[Optional[ScalarParams], list]:
    """``sp`` (the symbolic run-time arguments' points, or one empty point) times the
    valid values of each dynamic extent given as a range (``valid_extent_values``):
    the points of the one symbolic lift, and notes on values left out.  (None, [why])
    where there are too many points or none."""
    from ...model.compile import MAX_PARAM_POINTS

    if not ranges:
        return sp, []
    notes, lists = [], []
    for k, r in ranges.items():
        ok, note = valid_extent_values(cap, k, r)
        if note:
            notes.append(note)
        if not ok:
            return None, [f"no value of {k} is a valid extent ({note})"]
        lists.append(ok)
    combos = list(itertools.product(*lists))
    n = len(sp.points) * len(combos)
    if n > MAX_PARAM_POINTS:
        return None, [f"{n} values (symbolic: at most {MAX_PARAM_POINTS})"]
    points = tuple(p + c for p in sp.points for c in combos)
    args = {a: tuple(v for v in vals for _ in combos) for a, vals in sp.args.items()}
    shapes = {k: tuple(c[j] for _ in sp.points for c in combos)
              for j, k in enumerate(ranges)}
    return ScalarParams(sp.names + tuple(ranges), points, args, shapes), notes
