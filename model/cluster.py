"""Cluster layouts, CTA ranks, multicast masks, leader and peer CTAs.

A CuTe layout is a function from coordinates to indices: ``L(c) = sum_i c_i * d_i`` over
its modes (shape ``s``, stride ``d``).  ``make_layout(shape)`` without a stride is compact
and column-major, and a static size-1 mode gets stride 0, so the rank of coordinate
``(c0, c1, ...)`` of shape ``(s0, s1, ...)`` is ``c0 + s0*(c1 + s1*(c2 + ...))`` with the
coordinate of a size-1 mode ignored; ``make_layout(shape, stride=...)`` honours the
user's stride.  CuTe never wraps a coordinate: ``L((0, 3))`` of ``(2, 2):(1, 2)`` is 6.
``get_flat_coord(idx)`` / ``get_hier_coord(idx)`` invert the *layout*, not the shape: per
leaf mode ``(idx // d) % s`` (0 for a stride-0 mode), which for a bijective layout is the
coordinate ``c`` with ``L(c) == idx`` (checked against the installed CuTe DSL, static
folding and the PTX of a dynamic ``get_flat_coord(%cluster_ctarank)``).
``%cluster_ctarank`` is the linear CTA rank; bit ``r`` of every ctaMask selects rank ``r``
(PTX ISA ``cp.async.bulk.tensor`` / ``tcgen05.commit`` multicast).

Pipelines use the rank-4 ``cta_layout_vmnk`` = ``(V, M, N, L)``: ``V`` is the CTA-pair
mode of 2-CTA tcgen05 MMA (``cta_group::2``), ``M = cluster_m / V``, ``N = cluster_n``.
Blackwell kernels build it as ``tiled_divide(make_layout((Cm, Cn, 1)), (V,))``; Hopper
kernels as ``make_layout((1, Cm, Cn, 1))``.  Functions here mirror
``cute.core.make_layout_image_mask``, ``cpasync.create_tma_multicast_mask`` and the
private helpers of ``cutlass/pipeline/sm100.py`` (``_compute_mcast_arrival_mask``,
``_compute_is_leader_cta``, ``_compute_peer_cta_mask``, ``_compute_tmem_sync_mask``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import prod
from typing import Any, Optional

#: Hardware limit on CTAs per cluster that multicast masks can address (16-bit ctaMask).
MAX_CLUSTER_SIZE = 16

#: a shape or stride: an int or a (nested) tuple of them
IntTuple = Any


class MaskRangeError(ValueError):
    """An image mask names a rank no 16-bit ctaMask can hold (negative or >= 16)."""

    def __init__(self, msg: str, ranks: tuple[int, ...] = ()) -> None:
        super().__init__(msg)
        self.ranks = ranks


# --------------------------------------------------------------------------- int tuples


def _norm(x: IntTuple) -> IntTuple:
    """Lists become tuples; a tuple of one element is that element (``(2)`` is ``2``)."""
    if isinstance(x, (tuple, list)):
        t = tuple(_norm(e) for e in x)
        return t[0] if len(t) == 1 else t
    return x


def _leaves(x: IntTuple) -> list:
    if isinstance(x, tuple):
        out: list = []
        for e in x:
            out.extend(_leaves(e))
        return out
    return [x]


def _size(shape: IntTuple) -> int:
    return prod(_leaves(shape))


def _congruent(shape: IntTuple, stride: IntTuple) -> bool:
    if isinstance(shape, tuple):
        return (isinstance(stride, tuple) and len(stride) == len(shape)
                and all(_congruent(s, d) for s, d in zip(shape, stride)))
    return not isinstance(stride, tuple)


def compact_col_major(shape: IntTuple, start: int = 1) -> IntTuple:
    """CuTe's default stride: column-major over the leaves, 0 for a size-1 leaf."""

    def go(s: IntTuple, acc: list) -> IntTuple:
        if isinstance(s, tuple):
            return tuple(go(e, acc) for e in s)
        d = 0 if s == 1 else acc[0]
        acc[0] *= s
        return d

    return go(shape, [start])


def crd2idx(c: Any, shape: IntTuple, stride: IntTuple) -> int:
    """CuTe ``crd2idx``: ``sum c_i * d_i``; an int coordinate into a tuple mode is split
    colexicographically, the last sub-mode taking the rest.  Nothing wraps."""
    if isinstance(shape, tuple):
        if isinstance(c, tuple):
            if len(c) != len(shape):
                raise ValueError(f"coordinate {c} does not match shape {shape}")
            return sum(crd2idx(ci, si, di) for ci, si, di in zip(c, shape, stride))
        if isinstance(c, bool) or not isinstance(c, int):
            raise ValueError(f"coordinate {c!r} is not an int")
        out = 0
        for i, (si, di) in enumerate(zip(shape, stride)):
            if i == len(shape) - 1:
                out += crd2idx(c, si, di)
            else:
                n = _size(si)
                out += crd2idx(c % n, si, di)
                c //= n
        return out
    if isinstance(c, tuple) or isinstance(c, bool) or not isinstance(c, int):
        raise ValueError(f"coordinate {c!r} does not match shape {shape}")
    return c * stride


def idx2crd_hier(idx: int, shape: IntTuple, stride: IntTuple) -> Any:
    """``get_hier_coord``: per leaf ``(idx // d) % s`` (a stride-0 or size-1 leaf: 0)."""
    if isinstance(shape, tuple):
        return tuple(idx2crd_hier(idx, s, d) for s, d in zip(shape, stride))
    if shape == 1 or stride == 0:
        return 0
    return (idx // stride) % shape


def _colex(c: Any, shape: IntTuple) -> int:
    """A hierarchical coordinate of ``shape`` as one colexicographic int."""
    return crd2idx(c, shape, compact_col_major(shape)) if isinstance(shape, tuple) else c


# --------------------------------------------------------------------------- layouts


@dataclass(frozen=True)
class Layout:
    """A CuTe layout over CTA coordinates: top-level modes ``shape`` with ``stride``.

    ``stride=None`` is CuTe's compact column-major default (size-1 modes stride 0).
    Shapes and strides may nest (``((2, 2), 2)``); a tuple of one element is that element.
    """

    shape: tuple
    stride: Optional[tuple] = None

    def __post_init__(self) -> None:
        from .describe import describe

        shape = _norm(self.shape)
        if not isinstance(shape, tuple):
            shape = (shape,)
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 1
               for s in _leaves(shape)):
            raise ValueError(f"layout shape must be positive integers, got "
                             f"{describe(self.shape)}")
        if self.stride is None:
            stride = compact_col_major(shape)
        else:
            stride = _norm(self.stride)
            if len(shape) == 1 and not isinstance(stride, tuple):
                stride = (stride,)
            if any(isinstance(d, bool) or not isinstance(d, int) for d in _leaves(stride)):
                raise ValueError(f"layout stride must be integers, got "
                                 f"{describe(self.stride)}")
            if not _congruent(shape, stride):
                raise ValueError(f"shape {describe(self.shape)} and stride "
                                 f"{describe(self.stride)} must be congruent")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)

    @property
    def size(self) -> int:
        return _size(self.shape)

    @property
    def rank_of_modes(self) -> int:
        return len(self.shape)

    def mode_size(self, mode: int) -> int:
        return _size(self.shape[mode])

    @property
    def cosize(self) -> int:
        """``cosize``: one past the largest index (non-negative strides)."""
        return 1 + sum((s - 1) * d for s, d in zip(_leaves(self.shape), _leaves(self.stride)))

    @property
    def is_compact_default(self) -> bool:
        return self.stride == compact_col_major(self.shape)

    def rank(self, coord: tuple) -> int:
        """``L(coord)``: the index of a coordinate (one entry per mode).  No wrapping."""
        if not isinstance(coord, tuple) or len(coord) != len(self.shape):
            raise ValueError(f"coordinate {coord} does not match shape {self.shape}")
        return crd2idx(coord, self.shape, self.stride)

    __call__ = rank

    def _check_idx(self, idx: int) -> None:
        if not 0 <= idx < self.size:
            raise ValueError(f"rank {idx} outside a layout of size {self.size}")

    def hier_coord(self, idx: int) -> tuple:
        """``get_hier_coord(idx)``: the layout's inverse, per leaf ``(idx // d) % s``."""
        self._check_idx(idx)
        return idx2crd_hier(idx, self.shape, self.stride)

    def coord(self, idx: int) -> tuple:
        """``get_flat_coord(idx)``: one int per mode (a nested mode's coordinate as its
        colexicographic index), from ``get_hier_coord``."""
        h = self.hier_coord(idx)
        return tuple(_colex(c, s) for c, s in zip(h, self.shape))

    def image(self, coord: tuple, mode: int) -> tuple[int, ...]:
        """The indices ``make_layout_image_mask`` ORs: sweep ``mode``, keep the rest."""
        if not 0 <= mode < len(self.shape):
            raise ValueError(f"mode {mode} outside a rank-{len(self.shape)} layout")
        if not isinstance(coord, tuple) or len(coord) != len(self.shape):
            raise ValueError(f"coordinate {coord} does not match shape {self.shape}")
        out = []
        for c in range(self.mode_size(mode)):
            cc = list(coord)
            cc[mode] = c
            out.append(self.rank(tuple(cc)))
        return tuple(out)

    def image_mask(self, coord: tuple, mode: int) -> int:
        """``make_layout_image_mask(layout, coord, mode)``: OR of ``1 << L(c)`` over the
        swept mode.  CuTe refuses a static layout with ``cosize > 16`` and a negative
        index (negative shift); an index >= 16 does not fit the 16-bit mask (CuTe's
        ``Int16`` shift drops it): all raise ``MaskRangeError``."""
        ranks = self.image(coord, mode)
        if self.cosize > MAX_CLUSTER_SIZE:
            raise MaskRangeError(f"the layout's cosize {self.cosize} exceeds the 16 CTAs a "
                                 f"16-bit mask can address", ranks)
        bad = tuple(r for r in ranks if not 0 <= r < MAX_CLUSTER_SIZE)
        if bad:
            raise MaskRangeError(f"the image names rank(s) {', '.join(map(str, bad))}, "
                                 f"outside any cluster", bad)
        mask = 0
        for r in ranks:
            mask |= 1 << r
        return mask

    def all_ranks(self) -> range:
        return range(self.size)


def tiled_divide(layout: Layout, tiler: tuple[int, ...]) -> Layout:
    """``cute.tiled_divide(layout, (V,))``: mode 0 ``s0:d0`` becomes ``V:d0`` and
    ``s0/V : V*d0`` (stride 0 when ``s0 == V``); the other modes follow unchanged.
    ``(Cm, Cn, 1)`` -> ``(V, Cm/V, Cn, 1)``.  Only the rank-1 tiler of the Blackwell
    examples over a flat first mode is supported.
    """
    if len(tiler) != 1:
        raise ValueError("tiled_divide supports a rank-1 tiler (V,) over the first mode")
    v = tiler[0]
    first, d0 = layout.shape[0], layout.stride[0]
    if isinstance(first, tuple):
        raise ValueError("tiled_divide supports a flat first mode only")
    if isinstance(v, bool) or not isinstance(v, int) or v < 1 or first % v != 0:
        raise ValueError(f"cluster M extent {first} is not divisible by the CTA-pair size {v}")
    q = first // v
    return Layout((v, q) + layout.shape[1:],
                  (0 if v == 1 else d0, 0 if q == 1 else v * d0) + layout.stride[1:])


@dataclass(frozen=True)
class ClusterVMNK:
    """The rank-4 ``cta_layout_vmnk`` of a pipeline, with CUTLASS's derived quantities.

    Coordinates come from the layout (``get_flat_coord(rank)``, strides honoured) and
    masks from its image (``create_tma_multicast_mask``); leader and pair partner come
    from the hardware rank, as CUTLASS computes them (``blockIdx.x % V``,
    ``rank // 2 * 2``; the ``cta_group::2`` pair is ranks ``2k, 2k+1``).
    """

    layout: Layout

    @staticmethod
    def of(layout: Layout) -> "ClusterVMNK":
        if len(layout.shape) != 4:
            raise ValueError(
                f"cta_layout_vmnk must have 4 modes (V, M, N, L), got shape {layout.shape}"
            )
        if layout.mode_size(0) not in (1, 2):
            raise ValueError(f"the V (CTA pair) mode must be 1 or 2, got "
                             f"{layout.mode_size(0)}")
        return ClusterVMNK(layout)

    @property
    def V(self) -> int:
        return self.layout.mode_size(0)

    @property
    def M(self) -> int:
        return self.layout.mode_size(1)

    @property
    def N(self) -> int:
        return self.layout.mode_size(2)

    @property
    def L(self) -> int:
        return self.layout.mode_size(3)

    @property
    def size(self) -> int:
        return self.layout.size

    def coord(self, rank: int) -> tuple[int, int, int, int]:
        """``cta_layout_vmnk.get_flat_coord(rank)``."""
        c = self.layout.coord(rank)
        return (c[0], c[1], c[2], c[3])

    def peer_coord(self, rank: int) -> tuple[int, int, int, int]:
        """CUTLASS's peer coordinate ``(v ^ 1, m, n, l)`` -- also for ``V == 1``, where
        the default layout's stride 0 makes it the CTA's own coordinate."""
        v, m, n, l = self.coord(rank)
        return (v ^ 1, m, n, l)

    def is_leader(self, rank: int) -> bool:
        """``_compute_is_leader_cta``: ``blockIdx.x % V == 0``: the pair's even rank
        (the cluster's x extent is a multiple of V)."""
        return rank % self.V == 0

    def leader(self, rank: int) -> int:
        """Rank of the pair leader: ``rank // V * V`` (CUTLASS: ``rank // 2 * 2``)."""
        return rank // self.V * self.V

    def peer(self, rank: int) -> int:
        """The other CTA of the ``cta_group::2`` pair (``rank ^ 1``; itself when V == 1)."""
        return rank ^ 1 if self.V == 2 else rank

    def pair_mask(self, rank: int) -> int:
        """``_compute_tmem_sync_mask``: ``make_layout_image_mask(layout, coord, mode=0)``."""
        return self.layout.image_mask(self.coord(rank), 0)

    def peer_cta_mask(self, rank: int) -> int:
        """``_compute_peer_cta_mask``: mode-0 images at the coordinate and its peer's."""
        return (self.layout.image_mask(self.coord(rank), 0)
                | self.layout.image_mask(self.peer_coord(rank), 0))

    def row_mask(self, rank: int) -> int:
        """Ranks sharing (v, m, l): the CTAs an A tile is multicast to (sweep N, mode 2)."""
        return self.layout.image_mask(self.coord(rank), 2)

    def col_mask(self, rank: int) -> int:
        """Ranks sharing (v, n, l): the CTAs a B tile is multicast to (sweep M, mode 1)."""
        return self.layout.image_mask(self.coord(rank), 1)

    def mcast_arrival_mask(self, rank: int, mcast_mode_mn: tuple[int, int]) -> int:
        """``_compute_mcast_arrival_mask`` of ``cutlass/pipeline/sm100.py``.

        ``a(c) | b(c) | a(c') | b(c')`` for modes (1,1), where ``c`` is
        ``get_flat_coord(rank)`` and ``c' = (v ^ 1, m, n, l)``; ``b`` only for (0,1);
        ``a`` only for (1,0).  May raise ``MaskRangeError``.
        """
        m_on, n_on = mcast_mode_mn
        if not (m_on or n_on):
            raise ValueError("mcast_mode_mn (0, 0) is not allowed")
        mask = 0
        for c in (self.coord(rank), self.peer_coord(rank)):
            if m_on:
                mask |= self.layout.image_mask(c, 2)
            if n_on:
                mask |= self.layout.image_mask(c, 1)
        return mask

    def tma_empty_signal_targets(self, rank: int, mcast_mode_mn: tuple[int, int],
                                 compare_v: bool = True) -> tuple[int, ...]:
        """``PipelineTmaAsync.init_empty_barrier_arrive_signal`` evaluated for every lane.

        Lane ``l < cluster_size`` of each consumer warp signals CTA rank ``l`` when that
        CTA's coordinate (``get_hier_coord``, strides honoured) shares this CTA's
        (v, m, l) or (v, n, l), filtered by ``mcast_mode_mn``.  The 2-CTA variant of
        ``PipelineTmaMultiConsumersAsync`` (``_init_empty_barrier_arrive_signal_2sm``)
        does not compare v (``compare_v=False``).  Returns the destination ranks, one
        per signalling lane, in lane order.
        """
        if mcast_mode_mn == (0, 0):
            raise ValueError("mcast_mode_mn (0, 0) is not allowed")
        size = self.size
        if size > 32:
            raise ValueError("cluster size above 32 cannot be signalled by one warp")
        cv, cm, cn, cl = self.coord(rank)
        out = []
        for lane in range(min(32, size)):
            dv, dm, dn, dl = self.coord(lane % size)
            same_v = (dv == cv) or not compare_v
            same_m = same_v and dm == cm and dl == cl
            same_n = same_v and dn == cn and dl == cl
            if mcast_mode_mn == (1, 0):
                sig = same_m
            elif mcast_mode_mn == (0, 1):
                sig = same_n
            else:
                sig = same_m or same_n
            if sig:
                out.append(lane % size)
        return tuple(out)


def mask_ranks(mask: int) -> tuple[int, ...]:
    """The CTA ranks selected by a ctaMask, in increasing order."""
    out, r = [], 0
    while mask:
        if mask & 1:
            out.append(r)
        mask >>= 1
        r += 1
    return tuple(out)


def all_coords(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every coordinate of a shape, in rank order of the column-major layout."""
    lay = Layout(shape)
    return [lay.coord(r) for r in range(lay.size)]


__all__ = [
    "Layout",
    "ClusterVMNK",
    "MaskRangeError",
    "tiled_divide",
    "crd2idx",
    "idx2crd_hier",
    "compact_col_major",
    "mask_ranks",
    "all_coords",
    "MAX_CLUSTER_SIZE",
    "product",
]
