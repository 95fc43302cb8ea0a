"""Dynamic extents: fake tensors whose shape has a ``cute.sym_int32`` leaf.

``make_fake_compact_tensor(dtype, (32, cute.sym_int32(symbol="K")))`` compiles a
kernel whose tensor type prints ``"(32,?):(1,32)"``: the extent is a run-time value of
the tensor, and CuTe's layout ops (``cute.local_tile``, ``cute.size``,
``cute.get_shape``) carry it on as further ``?`` leaves.  The lifter keeps such a
tensor as a ``Shaped`` (the value of each ``?``, shape before stride) and follows the
few ops that lead from an extent to a loop bound, with the extent's value at each
point of a symbolic parameter (``--param K=LO..HI``):

* ``cute.zipped_divide(t, tile)`` and ``cute.local_tile(t, tile, coord)``: each tiled
  mode ``s:d`` by ``n:1`` is ``n:d`` inside the tile and ``ceil_div(s, n):n*d``
  across tiles (``cute/layout.hpp``, ``logical_divide``; a tile of a dynamic extent
  rounds up), then the modes ``coord`` leaves open (``_``);
* ``cute.slice``, ``cute.size``, ``cute.get_shape``, ``cute.get_stride``,
  ``cute.get_layout``, ``cute.make_layout``: the layout's values;
* integer tuple arithmetic (``cute.tuple_div``, ``cute.ceil_div``, ...) and ``arith``:
  point by point (``Lifter.pointwise``);
* the same ops in the host function (``host_values``), so that a kernel argument the
  host computes from an extent (a TMA coordinate tensor, a tile count, a tile
  scheduler's divisors, the grid) gets its value.

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
from .values import (OPAQUE, Lanes, Shaped, Sym, TupleSyntax, flatten, layout_of,
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
    return isinstance(pattern, (int, str)) and type(got) is type(pattern) and got == pattern


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


def _scale(d: Any, n: int) -> Any:
    """A stride times ``n``: an int, or a scaled basis element (``"E1@0"`` of a
    coordinate tensor: ``1@0`` times 64 is ``64@0``)."""
    if isinstance(d, int):
        return d * n
    m = re.fullmatch(r"E(-?\d+)(@.*)", d) if isinstance(d, str) else None
    return f"E{int(m.group(1)) * n}{m.group(2)}" if m else OPAQUE


def _divided(o: Op, vals: list) -> Optional[tuple]:
    """CuTe's ``zipped_divide`` of a tensor with dynamic extents by a tile of ``n:1``
    modes: ((inner shape, inner stride), (rest shape, rest stride)) -- each tiled mode
    ``s:d`` is ``n:d`` inside the tile and ``ceil_div(s, n):n*d`` across tiles; modes
    past the tile go across whole; a mode across tiles that is 1 whatever the
    extents' values has stride 0 (``cute/layout.hpp``, ``logical_divide``).  None
    where the layout is not one this follows."""
    t = vals[0]
    lay = _fill_layout(o.operand_types[0], t.leaves)
    raw = layout_of(o.operand_types[0])
    tq = quoted(o.operand_types[1]) if len(o.operand_types) > 1 else []
    if lay is None or raw is None or not tq:
        return None
    modes = [m.strip() for m in tq[0].strip("[]").split(";")]
    (shape, stride), rshape = lay, raw[0]
    if not isinstance(shape, tuple):
        shape, stride, rshape = (shape,), (stride,), (rshape,)
    if len(modes) > len(shape):
        return None
    inner_s, inner_d, rest_s, rest_d = [], [], [], []
    for k, (s, d) in enumerate(zip(shape, stride)):
        if not isinstance(s, int):
            return None  # a nested mode, or an extent without a value
        n = 1
        if k < len(modes):
            m = re.fullmatch(r"(\d+):1", modes[k])
            if m is None:
                return None  # a tile mode other than n:1
            n = int(m.group(1))
            inner_s.append(n)
            inner_d.append(d)
        rs = -((-s) // n)
        rest_s.append(rs)
        rest_d.append(0 if rshape[k] != "?" and rs == 1 else _scale(d, n))
    return (tuple(inner_s), tuple(inner_d)), (tuple(rest_s), tuple(rest_d))


def zipped_divide(o: Op, vals: list) -> Any:
    """``cute.zipped_divide(t, tile)``: ``((tile modes), (modes across tiles))``."""
    got = _divided(o, vals)
    if got is None:
        return why_not(vals)
    (i_s, i_d), (r_s, r_d) = got
    return _as_result(o, (i_s, r_s), (i_d, r_d), vals)


def local_tile(o: Op, vals: list) -> Any:
    """``cute.local_tile(t, tile, coord)``: the zipped divide, then the modes across
    tiles that ``coord`` leaves open (``_``), after the tile's modes."""
    got = _divided(o, vals)
    cq = quoted(o.operand_types[2]) if len(o.operand_types) > 2 else []
    if got is None or not cq:
        return why_not(vals)
    try:
        coord = parse_tuple(cq[0])
    except TupleSyntax:
        return why_not(vals)
    (i_s, i_d), (r_s, r_d) = got
    if not isinstance(coord, tuple):
        coord = (coord,)
    if len(coord) != len(r_s):
        return why_not(vals)
    keep = [k for k, c in enumerate(coord) if c is None]
    return _as_result(o, i_s + tuple(r_s[k] for k in keep),
                      i_d + tuple(r_d[k] for k in keep), vals)


def _kept(c: Any, t: Any, out: list) -> bool:
    """The modes of ``t`` a slice coordinate leaves open (``_``), in order."""
    if c is None:
        out.append(t)
        return True
    if isinstance(c, tuple):
        if not isinstance(t, tuple) or len(t) != len(c):
            return False
        return all(_kept(x, y, out) for x, y in zip(c, t))
    return isinstance(c, int)


def slice_(o: Op, vals: list) -> Any:
    """``cute.slice(t, coord)`` of a tensor with dynamic extents: the open modes."""
    lay = _fill_layout(o.operand_types[0], vals[0].leaves)
    cq = quoted(o.operand_types[1]) if len(o.operand_types) > 1 else []
    if lay is None or not cq:
        return why_not(vals)
    try:
        coord = parse_tuple(cq[0])
    except TupleSyntax:
        return why_not(vals)
    ks: list = []
    kd: list = []
    if not (_kept(coord, lay[0], ks) and _kept(coord, lay[1], kd)):
        return why_not(vals)
    if len(ks) == 1:
        return _as_result(o, ks[0], kd[0], vals)
    return _as_result(o, tuple(ks), tuple(kd), vals)


def make_layout(o: Op, vals: list) -> Any:
    """``cute.make_layout(shape[, stride])`` with dynamic leaves in the shape: the
    shape's values, the stride given or the type's (static) one."""
    shape = vals[0] if vals else None
    if not isinstance(shape, (tuple, int)):
        return why_not(vals)
    lay = layout_of(o.result_types[0]) if o.result_types else None
    if lay is None:
        return why_not(vals)
    stride = vals[1] if len(vals) > 1 and isinstance(vals[1], (tuple, int)) else lay[1]
    return _as_result(o, shape, stride, vals)


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


# ------------------------------------------------------------------ the host function
#: host ops followed from a dynamic extent to a kernel argument: pure integer and
#: layout arithmetic (every other host op's results are left without a value)
HOST_OPS = frozenset({
    "cute.get_layout", "cute.get_shape", "cute.get_stride", "cute.get_leaves",
    "cute.get_scalars", "cute.to_int_tuple", "cute.make_int_tuple", "cute.make_shape",
    "cute.make_coord", "cute.size", "cute.get", "cute.tuple_add", "cute.tuple_mul",
    "cute.tuple_sub", "cute.tuple_div", "cute.ceil_div", "cute.local_tile",
    "cute.zipped_divide", "cute.slice", "cute.make_layout",
    "cute.fast_divmod.create_divisor", "arith.constant"})
#: ops that build a TMA atom and its coordinate tensor (result 1) from a gmem tensor
TMA_MAKERS = ("cute_nvgpu.atom.make_non_exec_tiled_tma_load",
              "cute_nvgpu.atom.make_non_exec_tiled_tma_store")


def host_values(lf: Any, host: Op, start: dict, kernel: str
                ) -> tuple[dict[int, Any], Optional[tuple]]:
    """The kernel arguments (launch operand index -> value) that the host function
    computes from the fake tensors with dynamic extents (``start``: host argument ->
    ``Shaped``): its top-level ops in order, those of ``HOST_OPS`` evaluated with
    the lifter's own handlers (point by point where an operand holds a ``Sym``), a
    TMA maker's coordinate tensor given its source's extents (``tma_tensor``).  Only
    values that depend on a dynamic extent are returned: every other kernel
    argument stays as the lifter had it.  Also the launch's grid
    (``cuda.launch_cfg.create``) where the host computes it (None otherwise)."""
    from .values import WARP, Lanes

    env: dict[str, Any] = dict(start)
    derived = set(start)
    out: dict[int, Any] = {}
    grid: Optional[tuple] = None
    blk = host.regions[0][0]
    saved_w = lf.w
    lf.w = type(saved_w)(0, 0, (0, 0, 0))  # a warp of its own (interp.WarpRun)
    mask = Lanes([1] * WARP)
    try:
        for o in blk.ops:
            if o.name in ("cuda.launch_ex", "gpu.launch_func") and \
                    o.attrs.get("callee", "").endswith(f"@{kernel}"):
                ops = o.operands[1:] if o.name == "cuda.launch_ex" else o.operands
                for k, x in enumerate(ops):
                    v = env.get(x, OPAQUE)
                    # what the host computes from the extents, and the plain numbers
                    # beside them (a tile scheduler's divisor of 1)
                    if x in derived and v is not OPAQUE or \
                            isinstance(v, int) and not isinstance(v, bool):
                        out[k] = v
                continue
            if o.name == "cuda.launch_cfg.create" and len(o.operands) >= 7:
                grid = tuple(env.get(h, OPAQUE) for h in o.operands[4:7])
                continue
            if any(h in derived for h in o.operands):
                derived.update(o.results)
            if o.name == "cute.make_tile" and o.results:
                env[o.results[0]] = tile_sizes(o)  # a divisor of cute.ceil_div
                continue
            if o.name in TMA_MAKERS and len(o.results) == 2:
                env[o.results[0]] = OPAQUE
                env[o.results[1]] = _pointwise(lf, tma_tensor, o, env)
                continue
            fn = lf.table.get(o.name) if (o.name in HOST_OPS or (
                o.name.startswith("arith.") and not o.regions)) else None
            if fn is None:
                for r in o.results:
                    env[r] = OPAQUE
                continue
            got = _pointwise(lf, lambda op, vals, f=fn: f(lf, op, dict(zip(op.operands, vals)),
                                                         mask), o, env)
            if len(o.results) > 1 and isinstance(got, list):
                for r, v in zip(o.results, got):
                    env[r] = v
            else:
                for r in o.results:
                    env[r] = got
    except Exception:  # noqa: BLE001 -- a host the handlers cannot follow: no values
        out, grid = {}, None
    finally:
        lf.w = saved_w
    return out, grid


def _pointwise(lf: Any, fn: Any, o: Op, env: dict) -> Any:
    """``fn(op, operand values)``, point by point where an operand holds a ``Sym``;
    OPAQUE where the points' results do not merge."""
    vals = [env.get(h, OPAQUE) for h in o.operands]
    n = len(lf.param_points)
    if not n or not any(has_sym(v) for v in vals):
        return fn(o, vals)
    outs = {i: fn(o, [at_point(v, i) for v in vals]) for i in range(n)}
    if any(isinstance(r, list) for r in outs.values()):
        return [merge({i: r[k] for i, r in outs.items()}, n) or OPAQUE
                for k in range(len(next(iter(outs.values()))))]
    got = merge(outs, n)
    return OPAQUE if got is None else got


def tma_tensor(o: Op, vals: list) -> Any:
    """The coordinate tensor a TMA maker returns for a gmem tensor with dynamic
    extents: the tensor's shape over the basis strides of its type (CuTe's
    ``make_tma_atom``: the TMA tensor spans the whole gmem tensor)."""
    src = vals[0] if vals else None
    if not isinstance(src, Shaped) or len(o.result_types) < 2:
        return OPAQUE
    lay = _fill_layout(o.operand_types[0], src.leaves)
    res = layout_of(o.result_types[1])
    if lay is None or res is None:
        return OPAQUE
    out: list = []
    if not (_match(res[0], lay[0], out) and _match(res[1], res[1], out)):
        return OPAQUE
    return Shaped(tuple(out))


def tile_sizes(o: Op) -> Any:
    """A static tile ``[n:d;...]`` as the tuple of its modes' sizes."""
    q = quoted(o.result_types[0]) if o.result_types else []
    modes = q[0].strip("[]").split(";") if q else []
    sizes = [re.fullmatch(r"(\d+):-?\d+", m.strip()) for m in modes]
    if not sizes or not all(sizes):
        return OPAQUE
    return tuple(int(m.group(1)) for m in sizes)
