"""The lifter's values: what one op produces for one warp.

A warp runs its 32 lanes in lock step; a value is either the same in every lane (a
plain Python value) or a ``Lanes`` tuple.  Integers are exact (wrapped to the op's bit
width); ``Ptr`` is an address the lifter tracks (a shared-memory allocation and byte
offset, in this CTA or another CTA of the cluster after ``mapa``); ``View`` a CuTe
tensor over a pointer; ``Atom`` a TMA copy atom with the barrier and multicast mask
set on it; ``Dyn`` a value known only at run time (a try_wait token, a load from
memory) with, where the model can follow it, the ``DynExpr`` that computes it; and
``OPAQUE`` a value that does not matter to synchronisation (floating point data,
register fragments).  CuTe layouts are read from the type text
(``!cute.layout<"(32,2):(1,32)">``) and evaluated with ``crd2idx`` as CuTe defines it
(colexicographic coordinates, ``cute/layout.hpp``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Optional

WARP = 32


class Lanes(tuple):
    """A value that differs between the 32 lanes of a warp."""


def norm(v: Any) -> Any:
    """A per-lane value whose lanes all agree is a plain value."""
    if isinstance(v, Lanes) and all(x == v[0] for x in v):
        return v[0]
    return v


def lane(v: Any, i: int) -> Any:
    return v[i] if isinstance(v, Lanes) else v


@dataclass(frozen=True)
class Dyn:
    """A run-time value: ``expr`` a ``model.program.DynExpr`` over the warp's locals, or
    None where the model cannot follow it (then ``why`` says where it came from)."""

    expr: Any = None
    why: str = ""


@dataclass(frozen=True)
class Sym:
    """A run-time kernel argument bound to symbolic parameters (``--param K=LO..HI``):
    ``vals[i]`` is its value at point ``i`` of the parameter domain
    (``CompiledKernel.param_points``).  Integer ops on it are evaluated point by point
    (``Lifter.pointwise``); a branch on it splits the path (``Lifter.decide_points``)."""

    vals: tuple


@dataclass(frozen=True)
class Shaped:
    """A tensor or layout whose type text has dynamic leaves (``"(32,?):(1,32)"``, a
    fake tensor with a ``cute.sym_int32`` extent): ``leaves[i]`` is the value of the
    ``i``-th ``?`` of the type's layout text (shape before stride): an int, a ``Sym``
    (an extent named by a symbolic parameter) or a ``Dyn`` saying why it has no value.
    Handlers that do not know it treat it as they treat any run-time value."""

    leaves: tuple


@dataclass(frozen=True)
class Ptr:
    space: str           # smem | gmem | rmem | tmem
    alloc: int           # allocation id (shared memory)
    off: int             # byte offset in the allocation
    ebytes: int = 1      # element size the pointer steps by
    cta: Optional[int] = None  # another CTA of the cluster (``mapa``); None: this one
    #: a per-thread partition's pointer (``partition_S/D``) is lane 0's; ``span`` is
    #: what the whole warp covers: (lo, hi, layout text of the partitioned tensor, or
    #: "" once sliced), or (-1, -1, "") when not known
    span: Optional[tuple[int, int, str]] = None


@dataclass(frozen=True)
class View:
    """A CuTe tensor: a pointer and the layout text of its type."""

    ptr: Any
    type: str
    ebytes: int


@dataclass(frozen=True)
class Atom:
    """A TMA copy atom: direction, bits one copy moves, CTAs of a 2-CTA atom, how many
    CTAs ``tma_partition`` split the box over, and the fields set on it."""

    kind: str            # tma_load | tma_store | other
    bits: int
    num_cta: int
    split: int
    bar: Any = None
    mcast: Any = None


class _Opaque:
    def __repr__(self) -> str:
        return "OPAQUE"


OPAQUE: Any = _Opaque()

_ELEMENT_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2,
                  "f32": 4, "f64": 8, "f8E4M3FN": 1, "f8E5M2": 1, "tf32": 4}


def element_bytes(t: str) -> int:
    m = re.match(r"!cute\.(?:ptr|memref)<(\w+)", t)
    if m:
        return _ELEMENT_BYTES.get(m.group(1), 1)
    if "smem_desc" in t:
        return 16
    return 1


def bit_width(t: str) -> int:
    m = re.fullmatch(r"i(\d+)", t.strip())
    if m:
        return int(m.group(1))
    return 64  # index


def wrap(v: int, w: int) -> int:
    """``v`` as a signed integer of ``w`` bits (i1 stays 0/1)."""
    v &= (1 << w) - 1
    return v - (1 << w) if w > 1 and v >> (w - 1) else v


def unsigned(v: int, w: int) -> int:
    return v & ((1 << w) - 1)


# ---- CuTe's nested tuples as printed in types: "(?,0,(2,?))", "((8192,1),(1,6))"

_BRACES = re.compile(r"\{[^}]*\}")
_LEAF = re.compile(r"-?\d+@\d+(?:@\d+)*|-?\d+|\?|_")


class TupleSyntax(ValueError):
    pass


@functools.lru_cache(maxsize=8192)
def parse_tuple(s: str) -> Any:
    """A nested int tuple; ``?`` is a dynamic leaf, ``None`` an underscore.  (Cached: a
    kernel prints the same few hundred tuples thousands of times; the result is
    immutable.)"""
    s = _BRACES.sub("", s.strip())
    pos = 0

    def item() -> Any:
        nonlocal pos
        if s[pos] == "(":
            pos += 1
            out = []
            while s[pos] != ")":
                out.append(item())
                if s[pos] == ",":
                    pos += 1
            pos += 1
            return tuple(out)
        m = _LEAF.match(s, pos)
        if not m:
            raise TupleSyntax(s)
        pos += len(m.group(0))
        t = m.group(0)
        if "@" in t:
            return "E" + t  # a scaled basis element (coordinate tensors)
        return None if t == "_" else ("?" if t == "?" else int(t))

    try:
        return item()
    except IndexError:
        raise TupleSyntax(s) from None


def fill(t: Any, vals: list) -> Any:
    """Put the dynamic leaves' values (in order) into a parsed tuple."""
    if isinstance(t, tuple):
        return tuple(fill(x, vals) for x in t)
    if t == "?":
        return vals.pop(0)
    return t


def quoted(t: str) -> list[str]:
    return re.findall(r'"([^"]*)"', t)


def layout_of(t: str) -> Optional[tuple[Any, Any]]:
    """(shape, stride) of the last quoted ``shape:stride`` in a type's text."""
    for q in reversed(quoted(t)):
        if ":" in q:
            sh, st = q.split(":", 1)
            try:
                return parse_tuple(sh), parse_tuple(st)
            except TupleSyntax:
                return None
    return None


def size(shape: Any) -> Any:
    if isinstance(shape, tuple):
        r = 1
        for x in shape:
            r *= size(x)
        return r
    return shape


def crd2idx(c: Any, shape: Any, stride: Any) -> int:
    """CuTe's coordinate -> index: a plain int into a nested mode is colexicographic."""
    if c is None:
        return 0
    if isinstance(shape, tuple):
        if not isinstance(c, tuple):
            out = 0
            for s_i, d_i in zip(shape, stride):
                n = size(s_i)
                out += crd2idx(c % n, s_i, d_i)
                c //= n
            return out
        return sum(crd2idx(ci, si, di) for ci, si, di in zip(c, shape, stride))
    if isinstance(c, tuple):
        raise TypeError("coordinate deeper than the layout")
    return c * stride


def flat_coord(idx: int, shape: Any, stride: Any = None, hier: bool = False) -> tuple:
    """``get_flat_coord`` / ``get_hier_coord``: the layout's inverse, per leaf mode
    ``(idx // stride) % shape`` (0 for a stride-0 or size-1 mode), as the DSL folds it and
    its PTX computes it from ``%cluster_ctarank``; a nested mode's flat coordinate is its
    colexicographic index.  ``stride=None``: CuTe's compact column-major default.
    (``pipeproof.model.cluster`` holds the one definition.)"""
    from ...model.cluster import _colex, compact_col_major, idx2crd_hier

    if not isinstance(shape, tuple):
        shape, stride = (shape,), (None if stride is None else (stride,))
    if stride is None:
        stride = compact_col_major(shape)
    h = idx2crd_hier(idx, shape, stride)
    if hier:
        return h
    return tuple(_colex(c, s) for c, s in zip(h, shape))


def flatten(v: Any) -> list:
    if isinstance(v, tuple):
        out: list = []
        for x in v:
            out.extend(flatten(x))
        return out
    return [v]


def slice_extent(c: Any, shape: Any, stride: Any) -> Optional[tuple[int, int]]:
    """(offset, cosize) of the sub-layout a coordinate with ``None`` (``_``) modes
    selects; None when the coordinate does not fit the layout."""
    if c is None:
        sh, st = flatten(shape), flatten(stride)
        if not all(isinstance(x, int) for x in sh + st):
            return None
        return 0, 1 + sum((s - 1) * abs(d) for s, d in zip(sh, st))
    if isinstance(shape, tuple):
        if isinstance(c, int):  # an index into a nested mode: colexicographic
            try:
                return crd2idx(c, shape, stride), 1
            except TypeError:
                return None
        if not isinstance(c, tuple) or len(c) != len(shape):
            return None
        off, co = 0, 1
        for ci, si, di in zip(c, shape, stride):
            r = slice_extent(ci, si, di)
            if r is None:
                return None
            off += r[0]
            co += r[1] - 1
        return off, co
    if not isinstance(c, int) or not isinstance(stride, int):
        return None
    return c * stride, 1
