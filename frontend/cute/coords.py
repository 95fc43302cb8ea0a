"""Coordinate tensors: ``cute.make_identity_tensor`` and what is made of it, per thread.

An identity (coordinate) tensor maps a coordinate to itself: its layout's strides are
scaled basis elements (``1@0``, ``1@1``: CuTe's ``E<i>``, ``cute/arithmetic_tuple.hpp``)
and its iterator is an arithmetic tuple (the coordinate of its first element, ``(0,0)``
for a fresh one).  The usual predication of a kernel reads such a coordinate after a
tiled copy partitioned the tensor per thread (``if row < M``); evaluating it exactly,
lane by lane, lets the lifter follow the branch instead of ending UNKNOWN there.

A ``CoordTensor`` value is the coordinate of the tensor's first element; its layout is
the one in the op's type text.  The ops it goes through:

* ``cute.local_tile(t, tile, coord)``: the tile at ``coord`` starts at ``coord[i] *
  tile[i]`` along mode ``i``;
* ``cute.tiled.copy.partition_S/D(tiled_copy, t, thread)``: the thread's first value
  is at the tiler coordinate ``layout_copy_tv(thread, 0)`` (CuTe's ``ThrCopy``
  partition: the TV layout maps (thread, value) to an index into the tiler
  ``tiler_mn``, colexicographic, each tiler mode a ``size:stride`` layout along the
  tensor's mode);
* ``cute.slice(t, coord)``: the element at ``coord`` (underscores: the whole mode);
* ``cute.get_iter`` / ``cute.deref_arith_tuple_iter``: the coordinate as an int tuple.

Anything else (a tiler mode that is not a plain ``size:stride``, a basis element of
more than one level, a run-time extent) gives an opaque value: a branch on it still
ends UNKNOWN at the user's line, as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from .optable import op
from .values import (OPAQUE, WARP, Lanes, TupleSyntax, lane, layout_of, norm, parse_tuple,
                     quoted, size)


@dataclass(frozen=True)
class CoordTensor:
    """A coordinate tensor of one lane: the coordinate of its first element."""

    base: tuple


class _NoCoord(ValueError):
    pass


def _add(a: tuple, b: dict) -> tuple:
    return tuple(x + b.get(i, 0) for i, x in enumerate(a))


def coord_offset(c: Any, shape: Any, stride: Any, acc: Optional[dict] = None) -> dict:
    """The coordinate offset (mode -> amount) of the element at ``c`` of a layout whose
    strides are scaled basis elements (``"E1@0"`` as ``values.parse_tuple`` reads it);
    ``None`` in ``c``: a whole mode (a slice), which adds nothing."""
    acc = {} if acc is None else acc
    if c is None:
        return acc
    if isinstance(shape, tuple):
        if isinstance(c, int):  # one int for a nested mode: colexicographic
            for s, d in zip(shape, stride):
                n = size(s)
                if not isinstance(n, int):
                    raise _NoCoord("a run-time extent")
                coord_offset(c % n, s, d, acc)
                c //= n
            return acc
        if not isinstance(c, tuple) or len(c) != len(shape):
            raise _NoCoord("a coordinate of another rank")
        for ci, s, d in zip(c, shape, stride):
            coord_offset(ci, s, d, acc)
        return acc
    if not isinstance(c, int):
        raise _NoCoord("a coordinate known only at run time")
    if isinstance(stride, str) and stride.startswith("E"):
        parts = stride[1:].split("@")
        if len(parts) != 2:
            raise _NoCoord("a basis element of more than one level")
        acc[int(parts[1])] = acc.get(int(parts[1]), 0) + int(parts[0]) * c
        return acc
    if stride == 0:
        return acc
    if isinstance(stride, int):
        acc[0] = acc.get(0, 0) + stride * c  # a rank-1 coordinate
        return acc
    raise _NoCoord(f"stride {stride!r}")


def _per_lane(f: Any, *vals: Any) -> Any:
    """``f`` lane by lane where an operand differs between lanes."""
    if not any(isinstance(v, Lanes) for v in vals):
        return f(*vals)
    return norm(Lanes(f(*[lane(v, i) for v in vals]) for i in range(WARP)))


def _guard(f: Any) -> Any:
    def run(*a: Any) -> Any:
        try:
            return f(*a)
        except (_NoCoord, TupleSyntax, TypeError, ValueError, IndexError, ZeroDivisionError):
            return OPAQUE
    return run


def is_coord(v: Any) -> bool:
    return isinstance(v, CoordTensor) or (isinstance(v, Lanes) and
                                          any(isinstance(x, CoordTensor) for x in v))


@op("cute.make_identity_tensor")
def _make_identity(lf: Any, o: Any, env: dict, mask: Any) -> Any:
    q = quoted(o.result_types[0])
    try:
        base = parse_tuple(q[0]) if q else None
    except TupleSyntax:
        return OPAQUE
    if isinstance(base, int):
        base = (base,)
    if not isinstance(base, tuple) or not all(isinstance(x, int) for x in base):
        return OPAQUE
    return CoordTensor(base)


def _tile_sizes(t: str) -> Optional[list[tuple[int, int]]]:
    """``!cute.tile<"[8:1;32:1]">`` -> [(8, 1), (32, 1)] (size, stride per mode)."""
    m = re.search(r'"\[([^\]]*)\]"', t)
    if not m:
        return None
    out = []
    for part in m.group(1).split(";"):
        mm = re.fullmatch(r"\s*(\d+):(\d+)\s*", part)
        if not mm:
            return None
        out.append((int(mm.group(1)), int(mm.group(2))))
    return out


def local_tile(lf: Any, o: Any, env: dict) -> Any:
    """``cute.local_tile(t, tile, coord)`` of a coordinate tensor."""
    t, _tile, c = lf.operands(o, env)[:3]
    tiles = _tile_sizes(o.operand_types[1])
    lay = layout_of(o.operand_types[0])
    if tiles is None or lay is None:
        return OPAQUE

    @_guard
    def one(tt: Any, cc: Any) -> Any:
        if not isinstance(tt, CoordTensor):
            return OPAQUE
        cc = cc if isinstance(cc, tuple) else (cc,)
        if len(cc) != len(tiles) or any(s != 1 and n != 1 for n, s in tiles):
            return OPAQUE
        start = tuple(ci * n if ci is not None else None for ci, (n, _) in zip(cc, tiles))
        return CoordTensor(_add(tt.base, coord_offset(start, lay[0], lay[1])))
    return _per_lane(one, t, c)


def partition(lf: Any, o: Any, env: dict) -> Any:
    """``partition_S/D(tiled_copy, t, thread)`` of a coordinate tensor: the thread's
    first value's coordinate."""
    vals = lf.operands(o, env)
    if len(vals) < 3:
        return OPAQUE
    t, thr = vals[1], vals[2]
    ct = o.operand_types[0]
    tv = re.search(r'layout_copy_tv\s*=\s*<"([^"]*)">', ct)
    tiler = re.search(r'tiler_mn\s*=\s*<("\[[^\]]*\]")>', ct)
    lay = layout_of(o.operand_types[1])
    if not tv or not tiler or lay is None:
        return OPAQUE
    tiles = _tile_sizes(tiler.group(1))
    try:
        tv_shape, tv_stride = (parse_tuple(x) for x in tv.group(1).split(":", 1))
    except TupleSyntax:
        return OPAQUE
    if tiles is None:
        return OPAQUE

    @_guard
    def one(tt: Any, th: Any) -> Any:
        from .values import crd2idx

        if isinstance(th, tuple) and len(th) == 1:
            th = th[0]
        if not isinstance(tt, CoordTensor) or not isinstance(th, int):
            return OPAQUE
        idx = crd2idx((th, 0), tv_shape, tv_stride)
        c = []
        for n, s in tiles:  # colexicographic over the tiler's modes
            c.append((idx % n) * s)
            idx //= n
        shape = lay[0] if isinstance(lay[0], tuple) else (lay[0],)
        c += [0] * (len(shape) - len(c))  # modes past the tiler's: their first tile
        return CoordTensor(_add(tt.base, coord_offset(tuple(c), lay[0], lay[1])))
    return _per_lane(one, t, thr)


def slice_(lf: Any, o: Any, env: dict) -> Any:
    t, c = lf.operands(o, env)[:2]
    lay = layout_of(o.operand_types[0])
    if lay is None:
        return OPAQUE

    @_guard
    def one(tt: Any, cc: Any) -> Any:
        if not isinstance(tt, CoordTensor):
            return OPAQUE
        return CoordTensor(_add(tt.base, coord_offset(cc, lay[0], lay[1])))
    return _per_lane(one, t, c)


@op("cute.deref_arith_tuple_iter")
def _deref(lf: Any, o: Any, env: dict, mask: Any) -> Any:
    (it,) = lf.operands(o, env)[:1]

    def one(v: Any) -> Any:
        if not isinstance(v, CoordTensor):
            return OPAQUE
        return v.base if len(v.base) > 1 else v.base[0]
    return _per_lane(one, it)
