"""Cluster layouts, CTA ranks, multicast masks, leader and peer CTAs.

CuTe lays a cluster out as a compact column-major layout, and a static size-1 mode gets
stride 0 (``include/cute/stride.hpp``), so the rank of coordinate ``(c0, c1, ...)`` in a
shape ``(s0, s1, ...)`` is ``c0 + s0*(c1 + s1*(c2 + ...))`` with any coordinate of a
size-1 mode ignored.  ``%cluster_ctarank`` is that linear rank; bit ``r`` of every
ctaMask selects rank ``r`` (PTX ISA ``cp.async.bulk.tensor`` / ``tcgen05.commit``
multicast).

Pipelines use the rank-4 ``cta_layout_vmnk`` = ``(V, M, N, L)``: ``V`` is the CTA-pair
mode of 2-CTA tcgen05 MMA (``cta_group::2``), ``M = cluster_m / V``, ``N = cluster_n``.
Blackwell kernels build it as ``tiled_divide(make_layout((Cm, Cn, 1)), (V,))``; Hopper
kernels as ``make_layout((1, Cm, Cn, 1))``.  Functions here mirror
``cute.core.make_layout_image_mask``, ``cpasync.create_tma_multicast_mask`` and the
private helpers of ``cutlass/pipeline/sm100.py`` (``_compute_mcast_arrival_mask``,
``_compute_is_leader_cta``, ``_compute_peer_cta_rank``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import prod

#: Hardware limit on CTAs per cluster that multicast masks can address (16-bit ctaMask).
MAX_CLUSTER_SIZE = 16


@dataclass(frozen=True)
class Layout:
    """A compact column-major CuTe layout over CTA coordinates (flat shape)."""

    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.shape or any((not isinstance(s, int)) or s < 1 for s in self.shape):
            from .describe import describe

            raise ValueError(f"layout shape must be positive integers, got "
                             f"{describe(self.shape)}")

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def rank_of_modes(self) -> int:
        return len(self.shape)

    def rank(self, coord: tuple[int, ...]) -> int:
        """Linear rank of a coordinate (size-1 modes have stride 0)."""
        if len(coord) != len(self.shape):
            raise ValueError(f"coordinate {coord} does not match shape {self.shape}")
        r, stride = 0, 1
        for c, s in zip(coord, self.shape):
            if s != 1:
                r += (c % s) * stride
            stride *= s
        return r

    def coord(self, rank: int) -> tuple[int, ...]:
        """Coordinate of a linear rank (``get_hier_coord`` / ``get_flat_coord``)."""
        if not 0 <= rank < self.size:
            raise ValueError(f"rank {rank} outside a layout of size {self.size}")
        out = []
        for s in self.shape:
            out.append(rank % s)
            rank //= s
        return tuple(out)

    def image_mask(self, coord: tuple[int, ...], mode: int) -> int:
        """``make_layout_image_mask(layout, coord, mode)``: sweep ``mode``, keep the rest."""
        if not 0 <= mode < len(self.shape):
            raise ValueError(f"mode {mode} outside a rank-{len(self.shape)} layout")
        mask = 0
        for c in range(self.shape[mode]):
            cc = list(coord)
            cc[mode] = c
            mask |= 1 << self.rank(tuple(cc))
        return mask

    def all_ranks(self) -> range:
        return range(self.size)


def tiled_divide(layout: Layout, tiler: tuple[int, ...]) -> Layout:
    """``cute.tiled_divide(make_layout((Cm, Cn, 1)), (V,))`` -> shape ``(V, Cm/V, Cn, 1)``.

    Only the rank-1 tiler of the Blackwell examples is supported (the first mode is split).
    """
    if len(tiler) != 1:
        raise ValueError("tiled_divide supports a rank-1 tiler (V,) over the first mode")
    v = tiler[0]
    first = layout.shape[0]
    if v < 1 or first % v != 0:
        raise ValueError(f"cluster M extent {first} is not divisible by the CTA-pair size {v}")
    return Layout((v, first // v) + layout.shape[1:])


@dataclass(frozen=True)
class ClusterVMNK:
    """The rank-4 ``cta_layout_vmnk`` of a pipeline, with CUTLASS's derived quantities."""

    layout: Layout

    @staticmethod
    def of(layout: Layout) -> "ClusterVMNK":
        if len(layout.shape) != 4:
            raise ValueError(
                f"cta_layout_vmnk must have 4 modes (V, M, N, L), got shape {layout.shape}"
            )
        if layout.shape[0] not in (1, 2):
            raise ValueError(f"the V (CTA pair) mode must be 1 or 2, got {layout.shape[0]}")
        return ClusterVMNK(layout)

    @property
    def V(self) -> int:
        return self.layout.shape[0]

    @property
    def M(self) -> int:
        return self.layout.shape[1]

    @property
    def N(self) -> int:
        return self.layout.shape[2]

    @property
    def L(self) -> int:
        return self.layout.shape[3]

    @property
    def size(self) -> int:
        return self.layout.size

    def coord(self, rank: int) -> tuple[int, int, int, int]:
        c = self.layout.coord(rank)
        return (c[0], c[1], c[2], c[3])

    def is_leader(self, rank: int) -> bool:
        """``_compute_is_leader_cta``: ``blockIdx.x % V == 0``, i.e. the pair's even CTA."""
        return self.coord(rank)[0] == 0

    def leader(self, rank: int) -> int:
        """Rank of the pair leader: ``rank // 2 * 2`` in CUTLASS (V in {1, 2})."""
        return rank // self.V * self.V

    def peer(self, rank: int) -> int:
        """The other CTA of the pair (itself when V == 1)."""
        v, m, n, l = self.coord(rank)
        return self.layout.rank(((v + 1) % self.V, m, n, l))

    def pair_mask(self, rank: int) -> int:
        """``make_layout_image_mask(layout, coord, mode=0)``: both CTAs of the pair."""
        return self.layout.image_mask(self.coord(rank), 0)

    def row_mask(self, rank: int) -> int:
        """Ranks sharing (v, m, l): the CTAs an A tile is multicast to (sweep N, mode 2)."""
        return self.layout.image_mask(self.coord(rank), 2)

    def col_mask(self, rank: int) -> int:
        """Ranks sharing (v, n, l): the CTAs a B tile is multicast to (sweep M, mode 1)."""
        return self.layout.image_mask(self.coord(rank), 1)

    def mcast_arrival_mask(self, rank: int, mcast_mode_mn: tuple[int, int]) -> int:
        """``_compute_mcast_arrival_mask`` of ``cutlass/pipeline/sm100.py``.

        ``a(c) | b(c) | a(c') | b(c')`` for modes (1,1), where ``c'`` is the peer
        coordinate (v flipped); ``b`` only for (0,1); ``a`` only for (1,0).
        """
        peer = self.peer(rank)
        m_on, n_on = mcast_mode_mn
        if not (m_on or n_on):
            raise ValueError("mcast_mode_mn (0, 0) is not allowed")
        mask = 0
        for r in {rank, peer}:
            if m_on:
                mask |= self.row_mask(r)
            if n_on:
                mask |= self.col_mask(r)
        return mask

    def tma_empty_signal_targets(self, rank: int, mcast_mode_mn: tuple[int, int],
                                 compare_v: bool = True) -> tuple[int, ...]:
        """``PipelineTmaAsync.init_empty_barrier_arrive_signal`` evaluated for every lane.

        Lane ``l < cluster_size`` of each consumer warp signals CTA rank ``l`` when that
        CTA shares this CTA's multicast row (same v, m, l) or column (same v, n, l),
        filtered by ``mcast_mode_mn``.  The 2-CTA variant of
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
    "tiled_divide",
    "mask_ranks",
    "all_coords",
    "MAX_CLUSTER_SIZE",
    "product",
]
