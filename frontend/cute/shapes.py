"""Dynamic extents: fake tensors whose shape has a ``cute.sym_int32`` leaf.

``make_fake_compact_tensor(dtype, (32, cute.sym_int32(symbol="K")))`` compiles a
kernel whose tensor type prints ``"(32,?):(1,32)"``: the extent is a run-time value of
the tensor, and CuTe's layout ops (``cute.local_tile``, ``cute.size``,
``cute.get_shape``) carry it on as further ``?`` leaves.  The lifter keeps such a
tensor as a ``Shaped`` (the value of each ``?``, shape before stride) and follows the
few ops that lead from an extent to a loop bound, with the extent's value at each
point of a symbolic parameter (``--param K=LO..HI``):

* ``cute.local_tile(t, tile, coord)``: CuTe's ``zipped_divide`` by a tile of ``n:1``
  modes, then the rest modes that ``coord`` leaves open (``_``): mode ``i`` of extent
  ``s`` and stride ``d`` becomes ``(n, ceil_div(s, n)):(d, n*d)`` (``cute/layout.hpp``,
  ``logical_divide``; a tile of a dynamic extent rounds up);
* ``cute.size``, ``cute.get_shape``, ``cute.get_stride``, ``cute.get_layout``: the
  layout's values;
* integer tuple arithmetic (``cute.tuple_div``, ``cute.ceil_div``, ...) and ``arith``:
  point by point (``Lifter.pointwise``).

Every result is checked against the type the DSL printed for it: its static leaves
must be the ones computed, and its ``?`` leaves take the computed values.  A result
that does not match (a layout this module does not know how to divide) is a run-time
value with no value, so a loop bound made from it ends UNKNOWN at the user's line:
never a guess.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from .mlir_text import Op
from .values import (OPAQUE, Dyn, Lanes, Shaped, Sym, TupleSyntax, flatten, layout_of,
                     parse_tuple, quoted, size)


def has_sym(v: Any) -> bool:
    """Does a value hold a ``Sym`` anywhere (in a tuple or a ``Shaped``'s leaves)?"""
    if isinstance(v, Sym):
        return True
    if isinstance(v, Shaped):
        return any(has_sym(x) for x in v.leaves)
    if isinstance(v, tuple) and not isinstance(v, Lanes):
        return any(has_sym(x) for x in v)
    return False


def at_point(v: Any, i: int) -> Any:
    """The value at parameter point ``i``: every ``Sym`` in it replaced by its value."""
    if isinstance(v, Sym):
        return v.vals[i]
    if isinstance(v, Shaped):
        return Shaped(tuple(at_point(x, i) for x in v.leaves))
    if isinstance(v, tuple) and not isinstance(v, Lanes):
        return tuple(at_point(x, i) for x in v)
    return v


def merge(outs: dict[int, Any], n: int) -> Any:
    """Per-point results as one value: the same everywhere is that value; ints that
    differ are a ``Sym`` (points not in ``outs`` get the first one's value: this path
    is not possible there); tuples and ``Shaped`` leaf by leaf.  None where the
    results do not have one shape."""
    first = next(iter(outs.values()))
    if all(o == first for o in outs.values()):
        return first
    if all(isinstance(o, int) and not isinstance(o, bool) for o in outs.values()):
        return Sym(tuple(outs.get(i, first) for i in range(n)))
    if all(isinstance(o, Shaped) and len(o.leaves) == len(first.leaves)
           for o in outs.values()):
        leaves = [merge({i: o.leaves[k] for i, o in outs.items()}, n)
                  for k in range(len(first.leaves))]
        return None if any(x is None for x in leaves) else Shaped(tuple(leaves))
    if all(isinstance(o, tuple) and not isinstance(o, Lanes) and len(o) == len(first)
           for o in outs.values()):
        items = [merge({i: o[k] for i, o in outs.items()}, n) for k in range(len(first))]
        return None if any(x is None for x in items) else tuple(items)
    return None


def why_not(vals: list) -> Any:
    """What an op this module cannot follow gives: OPAQUE, as it did before dynamic
    extents were followed (a branch on it is then data, a loop bound on it UNKNOWN;
    ``Lifter.unvalued_extents_hint`` names the extents that had no value)."""
    return OPAQUE


def _fill_layout(t: str, leaves: tuple) -> Optional[tuple[Any, Any]]:
    """The (shape, stride) of a type's layout text with its ``?`` leaves filled in."""
    lay = layout_of(t)
    if lay is None:
        return None
    it = iter(leaves)

    def fill(x: Any) -> Any:
        if isinstance(x, tuple):
            return tuple(fill(y) for y in x)
        return next(it, OPAQUE) if x == "?" else x

    return fill(lay[0]), fill(lay[1])


def _match(pattern: Any, got: Any, out: list) -> bool:
    """Does a computed tuple fit the type's (``?`` leaves are free)?  Collects the
    values of the ``?`` leaves in ``out``, in order."""
    if isinstance(pattern, tuple):
        return isinstance(got, tuple) and len(got) == len(pattern) and \
            all(_match(p, g, out) for p, g in zip(pattern, got))
    if pattern == "?":
        out.append(got if isinstance(got, int) else OPAQUE)
        return True
    return isinstance(pattern, int) and got == pattern


def _as_result(o: Op, shape: Any, stride: Any, leaves_from: list) -> Any:
    """A computed layout as the op's result: a ``Shaped`` of the result type's ``?``
    leaves, once the type's static leaves agree with it; else the reason."""
    lay = layout_of(o.result_types[0]) if o.result_types else None
    if lay is None:
        return why_not(leaves_from)
    out: list = []
    if not (_match(lay[0], shape, out) and _match(lay[1], stride, out)):
        return OPAQUE  # a layout this module does not divide as the DSL did
    return Shaped(tuple(out))


def local_tile(o: Op, vals: list) -> Any:
    """``cute.local_tile(t, tile, coord)`` of a tensor with dynamic extents."""
    t = vals[0]
    lay = _fill_layout(o.operand_types[0], t.leaves)
    tq = quoted(o.operand_types[1]) if len(o.operand_types) > 1 else []
    cq = quoted(o.operand_types[2]) if len(o.operand_types) > 2 else []
    if lay is None or not tq or not cq:
        return why_not(vals)
    modes = [m.strip() for m in tq[0].strip("[]").split(";")]
    try:
        coord = parse_tuple(cq[0])
    except TupleSyntax:
        return why_not(vals)
    shape, stride = lay
    if not isinstance(shape, tuple):
        shape, stride = (shape,), (stride,)
    if not isinstance(coord, tuple):
        coord = (coord,)
    if len(modes) > len(shape) or len(coord) != len(shape):
        return why_not(vals)
    inner_s, inner_d, rest_s, rest_d = [], [], [], []
    for k, (s, d) in enumerate(zip(shape, stride)):
        m = re.fullmatch(r"(\d+):1", modes[k]) if k < len(modes) else None
        if k < len(modes) and m is None:
            return why_not(vals)  # a tile mode other than n:1
        if isinstance(s, tuple):
            return why_not(vals)  # a nested mode
        n = int(m.group(1)) if m else 1
        inner_s.append(n)
        inner_d.append(d)
        rs = -((-s) // n) if isinstance(s, int) else s
        rd = d * n if isinstance(d, int) else d
        if coord[k] is None:
            rest_s.append(rs)
            rest_d.append(rd)
        if not isinstance(s, int):
            return why_not(vals)
    if len(modes) < len(shape):  # modes the tile leaves alone: CuTe keeps them whole
        return why_not(vals)
    return _as_result(o, tuple(inner_s + rest_s), tuple(inner_d + rest_d), vals)


def size_of(o: Op, v: Shaped, modes: list[int]) -> Any:
    """``cute.size(t, mode=[...])`` of a tensor with dynamic extents."""
    lay = _fill_layout(o.operand_types[0], v.leaves)
    if lay is None:
        return why_not([v])
    s = lay[0]
    try:
        for m in modes:
            s = s[m]
    except (TypeError, IndexError):
        return why_not([v])
    if not all(isinstance(x, int) for x in flatten(s)):
        return why_not([v])
    return size(s)


def part(o: Op, v: Shaped) -> Any:
    """``cute.get_shape`` / ``get_stride`` / ``get_layout`` of a tensor with dynamic
    extents: the shape or stride as an int tuple (its leaves' values), a layout as a
    ``Shaped`` of its own ``?`` leaves."""
    lay = _fill_layout(o.operand_types[0], v.leaves)
    if lay is None:
        return why_not([v])
    if o.name == "cute.get_layout":
        return _as_result(o, lay[0], lay[1], [v])
    got = lay[0] if o.name == "cute.get_shape" else lay[1]
    q = quoted(o.result_types[0]) if o.result_types else []
    try:
        pattern = parse_tuple(q[0]) if q else None
    except TupleSyntax:
        pattern = None
    out: list = []
    if pattern is None or not _match(pattern, got, out):
        return OPAQUE
    return _ints(got)


def _ints(t: Any) -> Any:
    """A tuple with leaves that have no value as OPAQUE."""
    if isinstance(t, tuple):
        return tuple(_ints(x) for x in t)
    return t if isinstance(t, int) else OPAQUE
